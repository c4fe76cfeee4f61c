// hangscan's HTML report (issue 34): the page is built from the embedded hangscan/1 document.
// Everything a target controls (names, files, locals, command lines) is put into the page as
// text (textContent, through common.js's el()), never as markup; the page loads nothing from
// anywhere.

// The data (hangscan-html/1, report/html_writer.h) stores what ranks share once: frames,
// stacks (lists of frame indexes), thread shapes and process shapes. Stacks become arrays of
// shared frame objects here; a process's threads are put together when its page is shown.
const data = JSON.parse(document.getElementById("hs-data").textContent);
const stacks = (data.stacks || []).map((ids) => ids.map((i) => data.frames[i]));
const stackOf = (v) => (typeof v === "number" ? stacks[v] : v || []);
const threadShapes = (data.thread_shapes || []).map((s) => Object.assign({}, s, {
  frames: stackOf(s.frames), native_frames: stackOf(s.native_frames),
  kernel_frames: stackOf(s.kernel_frames)}));
// A process is a row of data.process_columns (its shape first); its shape holds the rest.
const processes = (data.processes || []).map((row) => {
  const p = Object.assign({}, (data.process_shapes || [])[row[0]]);
  data.process_columns.forEach((k, i) => { if (row[i] !== undefined && row[i] !== null) p[k] = row[i]; });
  return p;
});
const groups = (data.groups || []).map((g) => Object.assign({}, g, { frames: stackOf(g.frames) }));

// With --logs: each rank's last log line (last_logs), by rank.
const lastLogs = new Map((data.last_logs || []).map((l) => [l.rank, l]));
const lastLogOf = (p) => (p.rank !== null && p.rank !== undefined ? lastLogs.get(p.rank) : undefined);

// Where and when a last log line was written: "train-5-2.out:2, 30 s before the capture".
function logPlace(l) {
  const age = l.before_capture_s === null || l.before_capture_s === undefined ? ""
    : l.before_capture_s < 0 ? `, ${Math.round(-l.before_capture_s)} s after the capture`
      : `, ${Math.round(l.before_capture_s)} s before the capture`;
  return `${l.file.split("/").pop()}:${l.line}${age}`;
}

// A thread record is [tid, shape, blocked_s, cpu_ticks]; the last two may be left out.
function threadsOf(p) {
  return (p.threads || []).map(([tid, shape, blocked, ticks]) =>
    Object.assign({ tid, blocked_s: blocked === undefined ? null : blocked, cpu_ticks: ticks || 0 },
      threadShapes[shape]));
}

// Library frames hidden by the toggle: the C library, CPython's own machinery, MPI/NCCL/gloo.
const LIBRARY = [/\/libc\.so/, /\/ld-linux/, /libpython3/, /\/python3(\.\d+)?$/,
  /\/lib\/python3[^/]*\/(?!site-packages|dist-packages)/, /^<frozen /, /libmpi/, /libnccl/,
  /libgloo/, /libtorch/, /^_Py|^Py[A-Z]/, /^__(futex|libc|GI)|^start_thread$|^__clone/];

function ranges(nums) {
  const s = [...new Set(nums)].sort((a, b) => a - b);
  const out = [];
  for (let i = 0; i < s.length; i++) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
    out.push(i === j ? `${s[i]}` : `${s[i]}-${s[j]}`);
    i = j;
  }
  return out.join(",");
}

function memberName(p) {
  if (p.rank !== null && p.rank !== undefined) return `rank ${p.rank}`;
  return p.host ? `${p.host}:${p.pid}` : `pid ${p.pid}`;  // a core's process has no host
}

function frameText(f) {
  if (f.kind === "kernel") return f.function || "??";  // as the text report: no module, no offset
  const where = f.file ? ` (${f.file.split("/").pop()}${f.line ? ":" + f.line : ""})` : "";
  const off = !f.file && f.module ? ` [${f.module.split("/").pop()}+${f.offset || "?"}]` : "";
  return `${f.function || "??"}${where}${off}`;
}

function isLibrary(f) {
  const probe = [f.module || "", f.file || "", f.function || ""];
  return LIBRARY.some((re) => probe.some((s) => re.test(s)));
}

function processByPid(host, pid) {
  return processes.find((p) => p.pid === pid && (host === undefined || p.host === host));
}

// ---- the verdict -------------------------------------------------------------------------

// Each line is the text report's, from the page's "verdict" (report/html_verdict.h); a line
// with a finding, or a timing line, is a link: clicking it opens the tree at its nodes and
// picks its members.
function renderVerdict() {
  const box = document.getElementById("verdict");
  const list = el("ul", "verdict");
  for (const v of data.verdict || []) {
    const li = el("li", v.class);
    const text = el("div", "line", v.text);
    li.appendChild(text);
    if (v.finding !== undefined || v.group !== undefined) {
      text.classList.add("link");
      text.title = "show in the tree";
      text.addEventListener("click", () => pick(v, true));
    }
    list.appendChild(li);
  }
  for (const u of data.unreachable || []) list.appendChild(el("li", "note", `unreachable: ${u.host} (${u.reason})`));
  // A rank whose log was read but whose process was not captured (dead, or elsewhere): its
  // last words are all the page has of it.
  const captured = new Set(processes.map((p) => p.rank));
  for (const l of data.last_logs || []) {
    if (captured.has(l.rank)) continue;
    const li = el("li", "note log-only", `rank ${l.rank} (no process captured): `);
    li.appendChild(lastLogLine(l));
    list.appendChild(li);
  }
  if (!list.children.length) list.appendChild(el("li", "note", "no suspect named"));
  box.appendChild(list);
  const members = el("div", "members");
  for (const m of data.suspect_members || []) {
    const b = el("button", "member", memberName(m) + ` (pid ${m.pid})`);
    b.dataset.pid = m.pid;
    b.addEventListener("click", () => showProcess(processByPid(m.host, m.pid)));
    members.appendChild(b);
    const log = lastLogOf(m);
    if (log) members.appendChild(lastLogLine(log));
  }
  if (members.children.length) {
    box.appendChild(el("span", "muted", "suspects: "));
    box.appendChild(members);
  }
  box.appendChild(el("div", "picked"));
}

// ---- a verdict line picked: its nodes in the tree, its members --------------------------

// What the picked line names: tree nodes ([group, depth]), where the others are, members
// (process indexes) and, for a wait chain, the root everyone waits on.
let picked = null;

// A finding's list of process indexes: as is, or {"groups", "more"} (whole groups' members and
// the rest, report/html_verdict.h), put back in ascending order.
function processList(x) {
  if (Array.isArray(x)) return x;
  const all = x.groups.flatMap((g) => groups[g].members || []).concat(x.more);
  return all.sort((a, b) => a - b);
}

function pickOf(v) {
  const f = v.finding !== undefined ? data.findings[v.finding] : null;
  if (!f) {
    const g = groups[v.group];
    return { nodes: [[v.group, g.frames.length]], place: null, members: g.members || [] };
  }
  // A chain's and a deadlock's members are in their order (a deadlock's once per step of its
  // cycle: the same process again for threads of one process).
  const chain = f.kind === "wait_chain", cycle = f.kind === "deadlock";
  return { nodes: f.nodes || [], place: f.place_node || null, ranks: f.ranks || [],
    members: [...new Set(processList(f.members || []))],
    root: chain ? processList(f.others)[0] : undefined,
    hop: (chain && f.figures.chain) || cycle ? " -> " : ", " };
}

function pick(v, scroll) {
  picked = pickOf(v);
  picked.memberSet = new Set(picked.members);
  markTree(scroll);
  renderPicked();
  applySearch();  // the process table, the picked members first
}

// The tree node a [group, depth] names: the group's key path (outermost first) cut to depth
// frames, without the hidden library frames (then its nearest shown ancestor).
function nodeAt(g, depth) {
  const hide = document.getElementById("hide-library").checked;
  let node = treeRoot;
  for (const f of [...groups[g].frames].reverse().slice(0, depth)) {
    if (hide && isLibrary(f)) continue;
    node = node.children.get(frameText(f));
    if (!node) return null;
  }
  return node === treeRoot ? null : node;
}

// Marks the picked line's nodes ("found") and the others' place ("found-place"), each path opened.
function markTree(scroll) {
  for (const row of document.querySelectorAll("#tree .node.found, #tree .node.found-place"))
    row.classList.remove("found", "found-place");
  if (!picked) return;
  const mark = (ref, cls) => {
    const node = ref ? nodeAt(ref[0], ref[1]) : null;
    if (!node) return null;
    node.row.classList.add(cls);
    for (let li = node.li.parentElement; li && li.id !== "tree"; li = li.parentElement)
      if (li.tagName === "LI") li.classList.remove("collapsed");
    return node.row;
  };
  mark(picked.place, "found-place");
  const rows = picked.nodes.map((ref) => mark(ref, "found")).filter(Boolean);
  if (scroll && rows.length) rows[rows.length - 1].scrollIntoView({ block: "center" });
}

// Under the verdict: the picked line's members and their rank set, each a link to its page (at
// most PICKED_LINKS of them); a wait chain's root last.
const PICKED_LINKS = 50;

function renderPicked() {
  const box = document.querySelector("#verdict .picked");
  box.textContent = "";
  const ms = picked.members.map((i) => processes[i]).filter(Boolean);
  const root = picked.root !== undefined ? processes[picked.root] : undefined;
  if (!ms.length && !root) {  // a death or missing ranks with no process captured
    if (picked.ranks && picked.ranks.length)
      box.appendChild(el("span", "muted", `ranks [${ranges(picked.ranks)}]: no process captured`));
    return;
  }
  const ranks = ms.map((p) => p.rank).filter((r) => r !== null && r !== undefined);
  const set = ranks.length === ms.length && ms.length ? `ranks [${ranges(ranks)}]`
    : `${ms.length} process${ms.length === 1 ? "" : "es"}`;
  box.appendChild(el("span", "muted", `${set}: `));
  const link = (p, cls) => {
    const b = el("button", cls, memberName(p));
    b.addEventListener("click", () => showProcess(p));
    box.appendChild(b);
  };
  ms.slice(0, PICKED_LINKS).forEach((p, i) => {
    if (i) box.appendChild(el("span", "muted", picked.hop || ", "));
    link(p, "hop");
  });
  if (ms.length > PICKED_LINKS) box.appendChild(el("span", "muted", ` and ${ms.length - PICKED_LINKS} more`));
  if (root) {
    box.appendChild(el("span", "muted", " wait on "));
    link(root, "hop root");
  }
}

// A rank's last log line: the line as text, then where and when it was written.
function lastLogLine(l) {
  const box = el("div", "last-log");
  box.appendChild(el("span", "muted", "last log: "));
  box.appendChild(el("span", "log-text", l.text));
  box.appendChild(el("span", "muted", ` (${logPlace(l)})`));
  return box;
}

// ---- the merged stack tree ---------------------------------------------------------------

function buildTrie(hideLibrary) {
  const root = { children: new Map(), groups: new Set(), frame: null };
  groups.forEach((g, gi) => {
    let node = root;
    const frames = [...(g.frames || [])].reverse().filter((f) => !hideLibrary || !isLibrary(f));
    for (const f of frames) {
      const key = frameText(f);
      if (!node.children.has(key)) node.children.set(key, { children: new Map(), groups: new Set(), frame: f, key });
      node = node.children.get(key);
      node.groups.add(gi);
    }
    node.end = (node.end || []).concat([gi]);
  });
  return root;
}

function groupColour(gi) { return `hsl(${(gi * 137) % 360} 55% 40%)`; }

// A node's rank set in ranges ("[0-511,513-1023]") and its count ("1023 ranks"); a long set is cut, with its count, and
// shown whole on hover.
const LABEL_CHARS = 80;

function nodeLabel(node) {
  const ranks = [], pids = [];
  for (const gi of node.groups) {
    const g = groups[gi];
    for (const r of g.ranks || []) ranks.push(r);
    for (const p of g.pids || []) pids.push(p);
  }
  if (ranks.length !== pids.length || ranks.length === 0)
    return { text: `[${pids.length} process${pids.length === 1 ? "" : "es"}]` };
  const all = ranges(ranks);
  if (all.length <= LABEL_CHARS) return { text: `[${all}]`, count: `${ranks.length} rank${ranks.length === 1 ? "" : "s"}` };
  const cut = all.lastIndexOf(",", LABEL_CHARS);
  return { text: `[${all.slice(0, cut)},…] ${ranks.length} ranks`, title: all };
}

function renderNode(node, parentUl) {
  const li = el("li");
  node.li = li;
  const suspect = [...node.groups].some((gi) => groups[gi].suspect);
  const row = el("div", "node" + (suspect ? " suspect-path" : ""));
  const toggle = el("span", "toggle", node.children.size ? "▾" : " ");
  row.appendChild(toggle);
  const gi = [...node.groups][0];
  const label = nodeLabel(node);
  const badge = el("span", "ranks", label.text);
  if (label.title) badge.title = label.title;
  badge.style.background = node.groups.size === 1 ? groupColour(gi) : "#666";
  row.appendChild(badge);
  if (label.count) row.appendChild(el("span", "count", label.count));  // a cut label has its count
  row.appendChild(el("span", "fn", frameText(node.frame)));
  if (suspect && node.groups.size === 1 && node.end) row.appendChild(el("span", "mark", "<- suspect"));
  // A search finds a frame by its name, its file's whole path or its module's.
  const f = node.frame;
  row.dataset.search = [frameText(f), f.file || "", f.module || ""].join("\n").toLowerCase();
  node.row = row;
  li.appendChild(row);
  const ul = el("ul");
  for (const child of node.children.values()) renderNode(child, ul);
  li.appendChild(ul);
  // Opened where odd ranks diverge (a suspect's path); other branches start closed.
  const open = node.children.size <= 1 || suspect;
  if (!open) li.classList.add("collapsed");
  toggle.addEventListener("click", () => li.classList.toggle("collapsed"));
  parentUl.appendChild(li);
}

let treeRoot = null;  // the tree drawn last (buildTrie), each node with its li and row

function renderTree() {
  const box = document.getElementById("tree");
  box.textContent = "";
  const hide = document.getElementById("hide-library").checked;
  const ul = el("ul");
  treeRoot = buildTrie(hide);
  for (const child of treeRoot.children.values()) renderNode(child, ul);
  box.appendChild(ul);
  markTree(false);
  applySearch();
}

// ---- processes, search and a rank's page -------------------------------------------------

// Search text of each thread shape's frames, made once; a process matches a search by its own
// words or by the shapes of its threads.
const shapeText = threadShapes.map((t) =>
  t.frames.map((f) => `${f.function || ""}\n${f.file || ""}`).join("\n").toLowerCase());

function processText(p) {
  if (p.searchText === undefined) {
    p.searchText = [memberName(p), `pid ${p.pid}`, p.host || "", (p.cmdline || []).join(" ")]
      .join("\n").toLowerCase();
  }
  return p.searchText;
}

// At most this many rows are in the table at once (10,000 rows cost the browser seconds):
// suspects first, then in the report's order; a search picks the rows among all processes.
const TABLE_ROWS = 200;
const suspectKeys = new Set((data.suspect_members || []).map((m) => `${m.host}:${m.pid}`));
const isSuspect = (p) => suspectKeys.has(`${p.host}:${p.pid}`);
const suspectOrder = processes.filter(isSuspect).concat(processes.filter((p) => !isSuspect(p)));
const processIndex = new Map(processes.map((p, i) => [p, i]));

// The picked line's members first (its root, then the others), then suspects first.
function tableOrder() {
  if (!picked) return suspectOrder;
  const first = [...new Set([picked.root, ...picked.members])].map((i) => processes[i]).filter(Boolean);
  const firstSet = new Set(first);
  return first.concat(suspectOrder.filter((p) => !firstSet.has(p)));
}

function pickedClass(p) {
  if (!picked) return "";
  const i = processIndex.get(p);
  if (i === picked.root) return " picked root";
  return picked.memberSet.has(i) ? " picked" : "";
}

function renderProcesses(matches) {
  const table = document.getElementById("processes");
  table.textContent = "";
  const head = el("tr");
  const columns = ["member", "pid", "host", "state", "role"].concat(lastLogs.size ? ["last log"] : []);
  for (const h of columns) head.appendChild(el("th", "", h));
  table.appendChild(head);
  const order = tableOrder();
  const shown = order.filter(matches).slice(0, TABLE_ROWS + 1);
  for (const p of shown.slice(0, TABLE_ROWS)) {
    const tr = el("tr", "proc" + (isSuspect(p) ? " suspect" : "") + pickedClass(p));
    const name = el("button", "member", memberName(p));
    name.addEventListener("click", () => showProcess(p));
    const td = el("td");
    td.appendChild(name);
    tr.appendChild(td);
    for (const v of [p.pid, p.host, p.state, p.role]) tr.appendChild(el("td", "", v));
    if (lastLogs.size) {
      const log = lastLogOf(p);
      const cell = el("td", "log");
      if (log) {
        cell.appendChild(el("div", "log-text", log.text));
        cell.appendChild(el("div", "muted", logPlace(log)));
      }
      tr.appendChild(cell);
    }
    table.appendChild(tr);
  }
  if (shown.length > TABLE_ROWS) {
    const more = order.filter(matches).length - TABLE_ROWS;
    const tr = el("tr", "more");
    const td = el("td", "muted", `and ${more} more: search to narrow`);
    td.colSpan = columns.length;
    tr.appendChild(td);
    table.appendChild(tr);
  }
}

function applySearch() {
  const q = document.getElementById("search").value.trim().toLowerCase();
  let hits = 0;
  for (const row of document.querySelectorAll("#tree .node")) {
    const hit = q !== "" && row.dataset.search.includes(q);
    row.classList.toggle("hit", hit);
    if (hit) {
      hits++;
      for (let li = row.parentElement; li && li.id !== "tree"; li = li.parentElement)
        if (li.tagName === "LI") li.classList.remove("collapsed");
    }
  }
  const shapeHit = shapeText.map((text) => q !== "" && text.includes(q));
  renderProcesses((p) => q === "" || processText(p).includes(q) ||
    (p.threads || []).some((t) => shapeHit[t[1]]));
  document.getElementById("hits").textContent = q === "" ? "" : `${hits} frames match`;
}

// ---- a rank's page: what the text report says of each process and thread -----------------

const mib = (b) => `${(b / 1048576).toFixed(1)} MiB`;
// A Unix time as a UTC clock ("14:02:11 UTC"): when a wait began, the same on every viewer.
const utcClock = (t) => `${new Date(t * 1000).toISOString().slice(11, 19)} UTC`;

// The process's own facts: state, role, memory (rss, peak, its cgroup's use and limit).
function processFacts(p) {
  const m = p.memory || {};
  const cgroup = m.cgroup_usage_bytes ? `cgroup ${mib(m.cgroup_usage_bytes)}` +
    (m.cgroup_limit_bytes ? ` of ${mib(m.cgroup_limit_bytes)}` : "") : "";
  return [`state ${p.state}`, p.role ? `role ${p.role}` : "", m.rss_bytes ? `rss ${mib(m.rss_bytes)}` : "",
    m.peak_rss_bytes ? `peak ${mib(m.peak_rss_bytes)}` : "", cgroup].filter(Boolean).join(", ");
}

// A core's lines (its file, the signal, the crash explained, what it left out) and a death's.
function coreLines(p) {
  const out = [];
  if (p.core) out.push(`core: ${p.core}`);
  const s = p.signal;
  if (s) out.push(`signal: ${s.name} (${s.number})${s.address ? " at " + s.address : ""}, code ${s.code}`);
  for (const a of p.annotations || []) out.push(`crash: ${a}`);
  for (const o of p.omitted || []) out.push(`omitted from core: ${o}`);
  const d = p.death;
  if (d) out.push(`death: ${d.how}${d.signal_name ? " by " + d.signal_name : ""}` +
    (d.exit_code !== null && d.exit_code !== undefined ? `, exit code ${d.exit_code}` : ""));
  return out;
}

// "Thread 12 "name" (Python "MainThread", main, state S, futex, blocked 3.2 s (since ...))".
function threadHead(t, p) {
  const facts = [t.python_name ? `Python "${t.python_name}"` : "", t.is_main ? "main" : "",
    t.crashed ? "CRASHED" : "", t.state ? `state ${t.state}` : "", t.syscall || ""];
  if (t.blocked_s !== null && t.blocked_s !== undefined) {
    const since = p.captured_at ? ` (since ${utcClock(p.captured_at - t.blocked_s)}` +
      (t.blocked_first_seen_at ? ", first seen by an earlier dump)" : ")") : "";
    facts.push(`blocked ${t.blocked_s.toFixed(1)} s${since}`);
  }
  if (t.wchan && t.wchan !== "0") facts.push(`wchan ${t.wchan}`);
  facts.push(t.gil ? "holds GIL" : "", t.python_idle ? "idle" : "",
    t.gc_collecting ? "garbage collecting" : "", t.finalizing ? "the interpreter is shutting down" : "");
  const joined = facts.filter(Boolean).join(", ");
  return `Thread ${t.tid} "${t.name || ""}"${joined ? " (" + joined + ")" : ""}`;
}

// Frames with their source line and locals, under a heading ("native:", "kernel:") when given.
function frameLines(box, frames, heading) {
  if (frames.length && heading) box.appendChild(el("div", "muted", heading));
  for (const f of frames) {
    box.appendChild(el("div", "frame " + (f.kind || ""), frameText(f)));
    if (f.source) box.appendChild(el("div", "frame src", "    " + f.source));
    for (const l of f.locals || []) box.appendChild(el("div", "local", `${l.name} = ${l.value}`));
  }
}

function waitWords(w) {
  if (!w.pid) return w.via || "";
  if (w.tid) return `thread ${w.tid} of pid ${w.pid} via ${w.via}`;
  const who = w.host ? `${w.host}:${w.pid}` : `pid ${w.pid}`;
  return `${w.rank !== null && w.rank !== undefined ? `rank ${w.rank} (${who})` : who} via ${w.via}`;
}

function showProcess(p) {
  const page = document.getElementById("page");
  page.textContent = "";
  if (!p) return;
  page.appendChild(el("h2", "", p.host || p.rank !== null && p.rank !== undefined
    ? `${memberName(p)} (pid ${p.pid}${p.host ? ", " + p.host : ""})` : memberName(p)));
  page.appendChild(el("div", "muted", processFacts(p)));
  page.appendChild(el("div", "muted", "cmd: " + (p.cmdline || []).join(" ")));
  for (const line of coreLines(p)) page.appendChild(el("div", "core", line));
  const log = lastLogOf(p);
  if (log) page.appendChild(lastLogLine(log));
  for (const t of threadsOf(p)) {
    const box = el("div", "thread");
    box.appendChild(el("h3", t.crashed ? "crashed" : "", threadHead(t, p)));
    frameLines(box, t.frames || []);
    frameLines(box, t.native_frames || [], "native:");
    frameLines(box, t.kernel_frames || [], "kernel:");
    for (const w of t.waits_on || []) box.appendChild(el("div", "muted", `waits on: ${waitWords(w)}`));
    for (const n of t.notes || []) box.appendChild(el("div", "note", `note: ${n}`));
    page.appendChild(box);
  }
  page.scrollIntoView();
}

function main() {
  const title = `hangscan: ${processes.length} processes, ${groups.length} groups`;
  document.getElementById("title").textContent = title;
  document.title = title;
  renderVerdict();
  renderTree();  // and the process table, through applySearch()
  document.getElementById("hide-library").addEventListener("change", renderTree);
  document.getElementById("search").addEventListener("input", applySearch);
}

main();
