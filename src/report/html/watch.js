// hangscan's HTML report of a watch window (issue 34): the verdict, one timeline strip per
// process (on-CPU share, its longest waits with their wakers, signals and exits over the
// window) and the on-CPU flame graph of each group. Built from the embedded watch document
// (docs/output-schema.md, "watch") with common.js's el() only: nothing a target names is markup.

const watch = JSON.parse(document.getElementById("hs-data").textContent);
// A window across the nodes of a Slurm job (watch --slurm-job) has no window_s of its own: each
// node's window starts offset_s after the first, and its processes' times (waits, on-CPU
// buckets) are the node's own, so they are moved by that offset onto the one axis.
const nodeOf = new Map((watch.nodes || []).map((n) => [n.node, n]));
const windowS = watch.window_s > 0 ? watch.window_s
  : Math.max(1, ...(watch.nodes || []).map((n) => (n.offset_s || 0) + (n.window_s || 0)));
const offsetOf = (p) => (nodeOf.has(p.node) ? nodeOf.get(p.node).offset_s || 0 : 0);
const bucketOf = (p) => {
  const n = nodeOf.get(p.node);
  const b = n && n.cpu_bucket_s > 0 ? n.cpu_bucket_s : watch.cpu_bucket_s;
  return b > 0 ? b : windowS;
};
const pct = (s) => `${Math.max(0, Math.min(100, (s / windowS) * 100)).toFixed(3)}%`;

function who(p) {
  return p.rank !== null && p.rank !== undefined ? `rank ${p.rank}` : `pid ${p.pid}`;
}

function fnName(f) {
  const where = f.file ? ` (${f.file.split("/").pop()}${f.line ? ":" + f.line : ""})` : "";
  return `${f.function || "??"}${where}`;
}

function section(title) {
  const s = el("section");
  s.appendChild(el("h2", "", title));
  return s;
}

function verdictSection() {
  const s = section("Verdict");
  const list = el("ul", "verdict");
  for (const r of watch.suspect_reasons || []) list.appendChild(el("li", "suspect", "SUSPECT " + r));
  for (const n of watch.group_notes || []) list.appendChild(el("li", "note", "note: " + n));
  for (const g of watch.groups || [])
    list.appendChild(el("li", "", `${g.ranks.length ? "ranks " + g.ranks.join(",") : "pids " + g.pids.join(",")}: ${g.what}`));
  if (!list.children.length) list.appendChild(el("li", "note", "no suspect named"));
  s.appendChild(list);
  return s;
}

// One strip per process: each wait a bar from its start to its end (or the window's end), each
// signal or exit of the timeline a mark at its time; under it the on-CPU share over time, and
// the whole window's share beside the name.
function timelineSection() {
  const s = section(`Timelines (${windowS.toFixed(1)} s window, ${watch.recorder} recorder)`);
  for (const p of watch.processes || []) {
    const row = el("div", "strip-row");
    row.dataset.pid = p.pid;
    row.appendChild(el("span", "strip-name", `${who(p)} ${p.comm} ${Math.round(p.cpu_share * 100)}% CPU`));
    const strip = el("div", "strip");
    const offset = offsetOf(p);
    for (const w of p.waits || []) {
      const start = offset + (w.before_window ? 0 : w.end_s - w.duration_s);
      const bar = el("div", "wait" + (w.ongoing ? " ongoing" : ""));
      bar.style.left = pct(start);
      bar.style.width = pct(offset + w.end_s - start);
      const waker = w.waker ? `, woken by ${w.waker.comm} (pid ${w.waker.pid})` : "";
      const at = w.frames.find((f) => f.kind === "python") || w.frames[0];  // the Python line first
      bar.title = `${w.syscall || "off CPU"} ${w.duration_s.toFixed(2)} s${w.ongoing ? ", still waiting" : ""}${waker}` +
        (at ? ` in ${fnName(at)}` : "");
      strip.appendChild(bar);
    }
    for (const t of (watch.timeline || []).filter((e) => e.pid === p.pid && (e.node === undefined || e.node === p.node))) {
      const mark = el("div", "event " + t.kind);
      mark.style.left = pct(t.t_s);
      mark.title = t.text;
      strip.appendChild(mark);
    }
    const lanes = el("div", "lanes");
    lanes.appendChild(strip);
    lanes.appendChild(cpuStrip(p));
    row.appendChild(lanes);
    if (p.exit) row.appendChild(el("span", "muted", p.exit));
    s.appendChild(row);
  }
  return s;
}

// The process's on-CPU share over the window, a bar per bucket (cpu_over_time: CPUs used on
// average, so a bar is full at one CPU and marked when more were busy).
function cpuStrip(p) {
  const strip = el("div", "cpu-strip");
  const bucket = bucketOf(p), offset = offsetOf(p);
  (p.cpu_over_time || []).forEach((share, i) => {
    const from = offset + i * bucket, to = Math.min(windowS, from + bucket);
    const bar = el("div", "cpu" + (share > 1 ? " over" : ""));
    bar.style.left = pct(from);
    bar.style.width = pct(to - from);
    bar.style.height = `${(Math.min(share, 1) * 100).toFixed(1)}%`;
    bar.title = `${from.toFixed(1)}-${to.toFixed(1)} s: ${Math.round(share * 100)}% CPU`;
    strip.appendChild(bar);
  });
  return strip;
}

// The members' on-CPU stacks merged outermost first, each node as wide as its samples.
function flameTree(members) {
  const root = { name: "all", samples: 0, children: new Map() };
  for (const p of members) {
    for (const st of p.top_stacks || []) {
      root.samples += st.samples;
      let at = root;
      for (const f of [...st.frames].reverse()) {
        const name = fnName(f);
        if (!at.children.has(name)) at.children.set(name, { name, samples: 0, children: new Map() });
        at = at.children.get(name);
        at.samples += st.samples;
      }
    }
  }
  return root;
}

function flameNode(n, parentSamples) {
  const box = el("div", "flame-node");
  box.style.width = `${((n.samples / parentSamples) * 100).toFixed(3)}%`;
  const label = el("div", "flame-label", n.name);
  label.title = `${n.name}: ${n.samples} samples`;
  box.appendChild(label);
  const kids = el("div", "flame-children");
  for (const c of [...n.children.values()].sort((a, b) => b.samples - a.samples)) kids.appendChild(flameNode(c, n.samples));
  box.appendChild(kids);
  return box;
}

function flameSection() {
  const s = section("On-CPU flame graphs (outermost at the top)");
  const groups = (watch.groups || []).length ? watch.groups : [{ pids: (watch.processes || []).map((p) => p.pid), what: "every process" }];
  for (const g of groups) {
    const members = (watch.processes || []).filter((p) => g.pids.includes(p.pid));
    const tree = flameTree(members);
    const box = el("div", "flame");
    box.appendChild(el("h3", "", `${g.what}: ${tree.samples} samples`));
    if (tree.samples > 0) box.appendChild(flameNode(tree, tree.samples));
    s.appendChild(box);
  }
  return s;
}

function main() {
  const title = `hangscan watch: ${(watch.processes || []).length} processes, ${windowS.toFixed(1)} s`;
  document.getElementById("title").textContent = title;
  document.title = title;
  const page = document.querySelector("main");
  page.textContent = "";
  const column = el("div", "watch");
  for (const s of [verdictSection(), timelineSection(), flameSection()]) column.appendChild(s);
  page.appendChild(column);
}

main();
