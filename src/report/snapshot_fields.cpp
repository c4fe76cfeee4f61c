// Model pieces of hangscan documents: every value type-, range- and size-checked.
#include "report/snapshot_fields.h"
#include "util/parse_number.h"

#include <limits>

#include <fmt/format.h>

#include "util/diagnostic.h"

namespace hangscan {

using json = nlohmann::json;

namespace {
constexpr const char* kStackKeys[] = {"frames", "native_frames", "kernel_frames"};
}  // namespace

Death SnapshotFields::death(const json& v, const JsonPath& path) const {
  const json& o = object(v, path);
  Death d;
  d.how = str(o, "how", path);
  d.signal = opt_int(o, "signal", path, 0, 128);
  d.signal_name = str(o, "signal_name", path);
  d.exit_code = opt_int(o, "exit_code", path, 0, 255);
  d.core_dumped = boolean(o, "core_dumped", path);
  d.at = opt_number(o, "at", path, 0, 1e11);
  d.cgroup = str(o, "cgroup", path);
  d.limit_bytes = opt_bytes(o, "limit_bytes", path);
  d.rss_bytes = opt_bytes(o, "rss_bytes", path);
  d.detail = str(o, "detail", path);
  d.core = str(o, "core", path);
  d.evidence = strings(o, "evidence", path);
  d.pid = opt_int(o, "pid", path, 0, kIntMax);
  d.comm = str(o, "comm", path);
  d.host = str(o, "host", path);
  d.rank = opt_int(o, "rank", path, 0, kIntMax);
  if (const json* s = member(o, "slurm")) {
    const JsonPath sp = at(path, "slurm");
    const json& so = object(*s, sp);
    d.slurm_step = str(so, "step", sp);
    d.slurm_state = str(so, "state", sp);
    d.slurm_exit_code = str(so, "exit_code", sp);
  }
  return d;
}

std::vector<WaitEdge> SnapshotFields::waits_on(const json& obj, const JsonPath& path) const {
  std::vector<WaitEdge> out;
  if (!member(obj, "waits_on")) return out;
  const json& arr = array(obj, "waits_on", path, lim_.max_list, false);
  const JsonPath list = at(path, "waits_on");
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const JsonPath ep = at(list, i);
    const json& eo = object(arr[i], ep);
    out.push_back({str(eo, "host", ep), opt_int(eo, "pid", ep, 0, kIntMax),
                   opt_int(eo, "rank", ep, 0, kIntMax), str(eo, "via", ep),
                   opt_int(eo, "tid", ep, 0, kIntMax)});
  }
  return out;
}

std::optional<MemoryUsage> SnapshotFields::memory(const json& obj, const JsonPath& path) const {
  const json* v = member(obj, "memory");
  if (!v) return std::nullopt;
  const JsonPath mp = at(path, "memory");
  const json& mo = object(*v, mp);
  MemoryUsage m;
  m.rss_bytes = opt_bytes(mo, "rss_bytes", mp);
  m.peak_rss_bytes = opt_bytes(mo, "peak_rss_bytes", mp);
  m.cgroup = str(mo, "cgroup", mp);
  m.cgroup_usage_bytes = opt_bytes(mo, "cgroup_usage_bytes", mp);
  m.cgroup_limit_bytes = opt_bytes(mo, "cgroup_limit_bytes", mp);
  m.gpu_bytes = opt_bytes(mo, "gpu_bytes", mp);
  return m;
}

Frame SnapshotFields::frame(const json& v, const JsonPath& path) const {
  const json& o = object(v, path);
  Frame f;
  std::string kind = str(o, "kind", path);
  if (kind == "native") f.kind = FrameKind::native;
  else if (kind == "inline") f.kind = FrameKind::inline_frame;
  else if (kind == "python") f.kind = FrameKind::python;
  else if (kind == "kernel") f.kind = FrameKind::kernel;
  else fail(at(path, "kind"), fmt::format("unknown frame kind \"{}\"", kind.substr(0, 32)));
  f.function = str(o, "function", path);
  f.file = opt_str(o, "file", path);
  f.line = opt_int(o, "line", path, kIntMin, kIntMax);
  f.module = str(o, "module", path);
  f.pc = hex(o, "pc", path);
  f.offset = hex(o, "offset", path);
  f.build_id = str(o, "build_id", path);
  const json& locals = array(o, "locals", path, lim_.max_list, false);
  const JsonPath locals_path = at(path, "locals");
  for (std::size_t i = 0; i < locals.size(); ++i) {
    const JsonPath p = at(locals_path, i);
    const json& l = object(locals[i], p);
    f.locals.push_back({str(l, "name", p), str(l, "value", p)});
  }
  f.column = opt_int(o, "column", path, 0, kIntMax);
  f.end_line = opt_int(o, "end_line", path, 0, kIntMax);
  f.end_column = opt_int(o, "end_column", path, 0, kIntMax);
  f.source = opt_str(o, "source", path);
  return f;
}

std::vector<Frame> SnapshotFields::frame_list(const json& arr, const JsonPath& path) {
  check_array(arr, path, lim_.max_frames);
  count_frames(arr.size(), path);
  std::vector<Frame> out;
  out.reserve(arr.size());
  for (std::size_t i = 0; i < arr.size(); ++i) out.push_back(frame(arr[i], at(path, i)));
  return out;
}

void SnapshotFields::count_frames(std::size_t n, const JsonPath& path) {
  total_frames_ += n;
  if (total_frames_ > lim_.max_total_frames) {
    fail(path, fmt::format("more than {} frames in the document", lim_.max_total_frames));
  }
}

// A stack: an inline array (hangscan/1) or an index into the stacks table (agent documents),
// kept until the table is known.
FrameStack SnapshotFields::stack(const json& obj, int field, const JsonPath& path,
                                 std::size_t thread) {
  const char* key = kStackKeys[field];
  const json* v = member(obj, key);
  if (!v) return {};
  const JsonPath p = at(path, key);
  if (mode_ == Mode::agent && v->is_array()) int_value(*v, p, 0, kIntMax);  // fails
  if (mode_ == Mode::plain || v->is_array()) {
    if (v->is_array() && !inline_stack_) inline_stack_ = p.render();
    return frame_list(*v, p);
  }
  refs_.push_back(StackRef{process_, thread, field, *v});
  return {};
}

std::vector<Diagnostic> SnapshotFields::diagnostics(const json& obj, const JsonPath& path) const {
  const json& arr = array(obj, "diagnostics", path, lim_.max_list, false);
  const JsonPath diags_path = at(path, "diagnostics");
  std::vector<Diagnostic> out;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const JsonPath p = at(diags_path, i);
    const json& d = object(arr[i], p);
    Diagnostic diag;
    std::string sev = str(d, "severity", p);
    if (auto s = severity_named(sev)) diag.severity = *s;
    else fail(at(p, "severity"), fmt::format("unknown severity \"{}\"", sev.substr(0, 32)));
    diag.message = str(d, "message", p);
    diag.hint = str(d, "hint", p);
    diag.host = str(d, "host", p);
    diag.pid = opt_int(d, "pid", p, kIntMin, kIntMax);
    diag.tid = opt_int(d, "tid", p, kIntMin, kIntMax);
    out.push_back(std::move(diag));
  }
  return out;
}

ThreadSnapshot SnapshotFields::thread(const json& v, const JsonPath& path, std::size_t index) {
  const json& o = object(v, path);
  ThreadSnapshot t;
  t.tid = req_int(o, "tid", path, 0, kIntMax);
  t.name = str(o, "name", path);
  t.state = state(o, "state", path);
  t.wchan = opt_str(o, "wchan", path);
  t.syscall = opt_str(o, "syscall", path);
  t.is_main = boolean(o, "is_main", path);
  t.gil = opt_bool(o, "gil", path);
  t.python_idle = opt_bool(o, "python_idle", path);
  t.python_name = opt_str(o, "python_name", path);
  t.gc_collecting = opt_bool(o, "gc_collecting", path).value_or(false);
  t.finalizing = opt_bool(o, "finalizing", path).value_or(false);
  t.crashed = boolean(o, "crashed", path);
  t.incomplete = boolean(o, "incomplete", path);
  t.cpu_ticks =
      static_cast<std::uint64_t>(opt_int64(o, "cpu_ticks", path, 0, kInt64Max).value_or(0));
  t.frames = stack(o, 0, path, index);
  t.native_frames = stack(o, 1, path, index);
  t.kernel_frames = stack(o, 2, path, index);
  t.notes = strings(o, "notes", path);
  t.blocked_s = opt_number(o, "blocked_s", path, 0, 1e10);
  t.blocked_first_seen_at = opt_number(o, "blocked_first_seen_at", path, 0, 1e10);
  t.capture = opt_str(o, "capture", path);
  t.waits_on = waits_on(o, path);
  return t;
}

ProcessSnapshot SnapshotFields::process(const json& v, std::size_t index) {
  const JsonPath root;
  const JsonPath procs = at(root, "processes");
  const JsonPath path = at(procs, index);
  process_ = index;
  const json& o = object(v, path);
  ProcessSnapshot p;
  p.host = str(o, "host", path);
  p.pid = req_int(o, "pid", path, 0, kIntMax);
  p.ppid = opt_int(o, "ppid", path, 0, kIntMax).value_or(0);
  p.start_ticks =
      static_cast<std::uint64_t>(opt_int64(o, "start_ticks", path, 0, kInt64Max).value_or(0));
  p.rank = opt_int(o, "rank", path, 0, kIntMax);
  p.world_size = opt_int(o, "world_size", path, 0, kIntMax);
  p.local_rank = opt_int(o, "local_rank", path, 0, kIntMax);
  p.launcher = str(o, "launcher", path);
  p.role = str(o, "role", path);
  p.cmdline = strings(o, "cmdline", path);
  p.exe = str(o, "exe", path);
  p.state = state(o, "state", path);
  if (const json* cpu = member(o, "cpu_percent")) {
    if (!cpu->is_number())
      fail(at(path, "cpu_percent"), fmt::format("expected a number, got {}", cpu->type_name()));
    p.cpu_percent = cpu->get<double>();
  }
  p.progress = opt_str(o, "progress", path);
  p.captured_at = opt_number(o, "captured_at", path, 0, 1e11);
  p.memory = memory(o, path);
  if (const json* d = member(o, "death")) p.death = death(*d, at(path, "death"));
  p.tcp_connections = strings(o, "tcp_connections", path);
  if (const json* c = member(o, "container")) {
    const JsonPath cp = at(path, "container");
    const json& co = object(*c, cp);
    p.container = ContainerInfo{str(co, "runtime", cp), str(co, "id", cp), str(co, "name", cp),
                                str(co, "pod_uid", cp)};
  }
  p.pause_us = opt_int64(o, "pause_us", path, 0, kInt64Max).value_or(0);
  process_extras(o, path, p);
  const json& threads = array(o, "threads", path, lim_.max_threads, false);
  const JsonPath threads_path = at(path, "threads");
  p.threads.reserve(threads.size());
  for (std::size_t i = 0; i < threads.size(); ++i) {
    p.threads.push_back(thread(threads[i], at(threads_path, i), i));
  }
  p.diagnostics = diagnostics(o, path);
  return p;
}

// python, asyncio_tasks and core.
void SnapshotFields::process_extras(const json& o, const JsonPath& path, ProcessSnapshot& p) {
  if (const json* py = member(o, "python")) {
    const JsonPath pp = at(path, "python");
    const json& po = object(*py, pp);
    p.python = PythonInfo{str(po, "version", pp), boolean(po, "nonblocking", pp),
                          str(po, "locator", pp), opt_bool(po, "finalizing", pp).value_or(false),
                          opt_bool(po, "gc_collecting", pp).value_or(false)};
  }
  const json& tasks = array(o, "asyncio_tasks", path, lim_.max_list, false);
  const JsonPath tasks_path = at(path, "asyncio_tasks");
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const JsonPath tp = at(tasks_path, i);
    const json& to = object(tasks[i], tp);
    AsyncioTask t;
    t.name = str(to, "name", tp);
    t.address = hex(to, "address", tp);
    t.awaits_task = opt_str(to, "awaits_task", tp);
    t.awaits = opt_str(to, "awaits", tp).value_or("");
    if (const json* c = member(to, "coroutines"))
      t.coroutines = frame_list(*c, at(tp, "coroutines"));
    p.asyncio_tasks.push_back(std::move(t));
  }
  if (auto core = opt_str(o, "core", path)) {
    CoreInfo ci;
    ci.path = *core;
    if (const json* sig = member(o, "signal")) {
      const JsonPath sp = at(path, "signal");
      const json& so = object(*sig, sp);
      SignalInfo si;
      si.number = req_int(so, "number", sp, 0, kIntMax);
      si.name = str(so, "name", sp);
      if (member(so, "address")) si.address = hex(so, "address", sp);
      si.code = opt_int(so, "code", sp, kIntMin, kIntMax).value_or(0);
      ci.signal = si;
    }
    ci.crashed_tid = opt_int(o, "crashed_tid", path, 0, kIntMax);
    ci.annotations = strings(o, "annotations", path);
    ci.omitted = strings(o, "omitted", path);
    p.core = std::move(ci);
  }
}

void SnapshotFields::top_level(const json& doc, JobSnapshot& out) {
  const JsonPath root;
  out.job_id = str(doc, "job_id", root);
  out.expected_world_size = opt_int(doc, "expected_world_size", root, 0, kIntMax);
}

void SnapshotFields::forget_references() {
  refs_.clear();
  inline_stack_.reset();
}

void SnapshotFields::check_table_shape(bool present, const std::optional<json>& not_array,
                                       std::size_t count, const JsonPath& path) const {
  if (!present || (not_array && not_array->is_null())) fail(path, "missing");
  if (not_array) fail(path, fmt::format("expected an array, got {}", not_array->type_name()));
  if (count > lim_.max_table)
    fail(path, fmt::format("{} entries, more than the limit of {}", count, lim_.max_table));
}

std::vector<std::string_view> SnapshotFields::strings_table(const RawStrings& raw,
                                                            const JsonPath& root) const {
  const JsonPath path = at(root, "strings");
  check_table_shape(raw.table.present, raw.table.not_array, raw.table.count, path);
  std::vector<std::string_view> out;
  out.reserve(raw.table.items.size());
  for (std::size_t i = 0; i < raw.table.items.size(); ++i) {
    if (raw.first_bad && raw.first_bad->first == i)
      string_value(raw.first_bad->second, at(path, i));
    const std::string& s = raw.table.items[i];
    if (s.size() > max_string())
      fail(at(path, i), fmt::format("string of {} bytes, more than {}", s.size(), max_string()));
    out.push_back(s);
  }
  return out;
}

// [kind, function, file, line, module, pc, offset, build_id, locals, column, end_line,
// end_column, source]: strings by index, trailing defaults omitted.
FrameView SnapshotFields::compact_frame(const RawEntry& raw, const json* values,
                                        const JsonPath& path) const {
  const std::vector<std::string_view>& strings = table_strings_;
  if (raw.not_array)
    fail(path, fmt::format("expected an array, got {}", raw.not_array->type_name()));
  if (raw.count > 13) fail(path, fmt::format("{} entries, more than the limit of 13", raw.count));
  if (raw.count == 0) fail(path, "empty frame");
  const json* a = values + raw.first;
  FrameView f;
  f.kind = static_cast<FrameKind>(int_value(a[0], at(path, std::size_t{0}), 0, 3));
  auto slot = [&](std::size_t i) -> const json* {
    return i < raw.stored && !a[i].is_null() ? &a[i] : nullptr;
  };
  auto text = [&](std::size_t i) {
    return strings[index(a[i], strings.size(), at(path, i), "string")];
  };
  if (slot(1)) f.function = text(1);
  if (slot(2)) f.file = text(2);
  if (auto* x = slot(3)) f.line = static_cast<int>(int_value(*x, at(path, 3), kIntMin, kIntMax));
  if (slot(4)) f.module = text(4);
  if (auto* x = slot(5)) f.pc = unsigned_value(*x, at(path, 5));
  if (auto* x = slot(6)) f.offset = unsigned_value(*x, at(path, 6));
  if (slot(7)) f.build_id = text(7);
  if (auto* x = slot(8)) {
    const JsonPath locals_path = at(path, 8);
    const json& locals = check_array(*x, locals_path, lim_.max_list);
    for (std::size_t i = 0; i < locals.size(); ++i) {
      const JsonPath lp = at(locals_path, i);
      const json& l = check_array(locals[i], lp, 2);
      if (l.size() != 2) fail(lp, "expected [name, value]");
      f.locals.emplace_back(strings[index(l[0], strings.size(), at(lp, std::size_t{0}), "string")],
                            strings[index(l[1], strings.size(), at(lp, 1), "string")]);
    }
  }
  if (auto* x = slot(9)) f.column = static_cast<int>(int_value(*x, at(path, 9), 0, kIntMax));
  if (auto* x = slot(10)) f.end_line = static_cast<int>(int_value(*x, at(path, 10), 0, kIntMax));
  if (auto* x = slot(11)) f.end_column = static_cast<int>(int_value(*x, at(path, 11), 0, kIntMax));
  if (slot(12)) f.source = text(12);
  return f;
}

std::vector<std::uint32_t> SnapshotFields::stack_entry(const RawEntry& raw, const json* values,
                                                       std::size_t frames,
                                                       const JsonPath& path) const {
  if (raw.not_array)
    fail(path, fmt::format("expected an array, got {}", raw.not_array->type_name()));
  if (raw.count > lim_.max_frames)
    fail(path, fmt::format("{} entries, more than the limit of {}", raw.count, lim_.max_frames));
  std::vector<std::uint32_t> ids;
  ids.reserve(raw.stored);
  for (std::size_t i = 0; i < raw.stored; ++i)
    ids.push_back(static_cast<std::uint32_t>(index(values[raw.first + i], frames, path, "frame")));
  return ids;
}

// Every frame is checked here; only those a thread's stack uses are read again (as views) by
// resolve_stacks().
void SnapshotFields::check_tables(const RawStrings& strings, const RawEntries& frames,
                                  const RawEntries& stacks) {
  const JsonPath root;
  table_strings_ = strings_table(strings, root);
  const JsonPath frames_path = at(root, "frames");
  check_table_shape(frames.present, frames.not_array, frames.count, frames_path);
  for (std::size_t i = 0; i < frames.items.size(); ++i)
    compact_frame(frames.items[i], frames.values.data(), at(frames_path, i));
  frame_count_ = frames.items.size();
  const JsonPath stacks_path = at(root, "stacks");
  check_table_shape(stacks.present, stacks.not_array, stacks.count, stacks_path);
  entries_.reserve(stacks.items.size());
  for (std::size_t i = 0; i < stacks.items.size(); ++i)
    entries_.push_back(
        stack_entry(stacks.items[i], stacks.values.data(), frame_count_, at(stacks_path, i)));
}

void SnapshotFields::resolve_stacks(JobSnapshot& out, const RawEntries& frames,
                                    SharedStacks& shared) {
  const JsonPath root;
  auto ref_path = [&](const StackRef& r, auto&& use) {
    const JsonPath procs = at(root, "processes");
    const JsonPath proc = at(procs, r.process);
    const JsonPath threads = at(proc, "threads");
    const JsonPath thread = at(threads, r.thread);
    use(at(thread, kStackKeys[r.field]));
  };
  if (mode_ != Mode::agent) {
    if (!refs_.empty()) {
      ref_path(refs_.front(), [&](const JsonPath& p) { check_array(refs_.front().value, p, 0); });
    }
    return;
  }
  if (inline_stack_) throw BadDocument{*inline_stack_ + ": expected an integer, got array"};
  // Only stacks a thread uses are built: the total frame bound counts what threads expand to.
  std::vector<std::int64_t> run_frame(frame_count_, -1);
  std::vector<std::optional<FrameStack>> built(entries_.size());
  std::vector<std::uint32_t> ids;
  auto lock = shared.hold();
  for (const StackRef& r : refs_) {
    ref_path(r, [&](const JsonPath& p) {
      auto idx = static_cast<std::size_t>(int_value(r.value, p, 0, kIntMax));
      if (idx >= entries_.size()) fail(p, fmt::format("stack {} does not exist", idx));
      count_frames(entries_[idx].size(), p);
      if (!built[idx]) {
        ids.clear();
        for (std::uint32_t fi : entries_[idx]) {
          if (run_frame[fi] < 0) {
            const JsonPath frames_path = at(root, "frames");
            const JsonPath fp = at(frames_path, fi);  // checked already: cannot fail
            run_frame[fi] =
                shared.frame_id(compact_frame(frames.items[fi], frames.values.data(), fp));
          }
          ids.push_back(static_cast<std::uint32_t>(run_frame[fi]));
        }
        built[idx] = shared.stack(ids);
      }
      ThreadSnapshot& t = out.processes[r.process].threads[r.thread];
      (r.field == 0 ? t.frames : r.field == 1 ? t.native_frames : t.kernel_frames) = *built[idx];
    });
  }
}

void SnapshotFields::rest(const json& doc, JobSnapshot& out) const {
  const JsonPath root;
  if (const json* un = member(doc, "unreachable")) {
    const JsonPath un_path = at(root, "unreachable");
    const json& arr = check_array(*un, un_path, lim_.max_processes);
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const JsonPath p = at(un_path, i);
      const json& u = object(arr[i], p);
      out.unreachable.push_back({str(u, "host", p), str(u, "reason", p)});
    }
  }
  out.diagnostics = diagnostics(doc, root);
  if (const json* ds = member(doc, "deaths")) {
    const JsonPath dp = at(root, "deaths");
    const json& arr = check_array(*ds, dp, lim_.max_processes);
    for (std::size_t i = 0; i < arr.size(); ++i) out.deaths.push_back(death(arr[i], at(dp, i)));
  }
}

}  // namespace hangscan
