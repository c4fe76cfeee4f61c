// What both views of hangscan's HTML page use (put before report.js or watch.js): every
// element is made here, and every string a target controls goes in as text (textContent),
// never as markup.
"use strict";

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
