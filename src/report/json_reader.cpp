// The defensive JSON reader. Every value is type- and range-checked; nothing is trusted.
#include "report/json_reader.h"

#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/agent_format.h"
#include "report/json_writer.h"
#include "util/parse_number.h"

namespace hangscan {

using nlohmann::json;

namespace {

// Internal only: unwinds the conversion to the single catch in read_job_json.
struct BadDocument {
  std::string message;
};

// A JSON path ("processes[3].threads[0].tid") kept as links on the stack and rendered only
// when an error is reported: building strings per field made reading 5x slower.
struct Path {
  const Path* parent = nullptr;
  const char* key = nullptr;  // member name; null for an array index (or the root)
  std::size_t index = 0;

  std::string render() const {
    if (!parent) return {};
    std::string prefix = parent->render();
    if (key) return prefix.empty() ? std::string(key) : prefix + "." + key;
    return prefix + "[" + std::to_string(index) + "]";
  }
};

Path at(const Path& p, const char* key) { return Path{&p, key, 0}; }
Path at(const Path& p, std::size_t i) { return Path{&p, nullptr, i}; }

[[noreturn]] void fail(const Path& path, const std::string& what) {
  std::string where = path.render();
  throw BadDocument{where.empty() ? what : where + ": " + what};
}

const char* type_name(const json& v) { return v.type_name(); }

// Nesting depth outside strings, counted before nlohmann builds anything.
bool depth_within(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escape = false;
  for (char c : text) {
    if (in_string) {
      if (escape) escape = false;
      else if (c == '\\') escape = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

class Converter {
 public:
  explicit Converter(const ReadLimits& limits) : lim_(limits) {}

  JobSnapshot job(const json& doc) {
    const Path root;
    if (!doc.is_object())
      fail(root, fmt::format("document is {}, expected an object", type_name(doc)));
    std::string schema = str(doc, "schema", root);
    bool agent = schema == kAgentSchemaName;
    if (!agent && schema != kSchemaName) {
      fail(at(root, "schema"), fmt::format("unknown schema \"{}\" (expected {} or {})",
                                           schema.substr(0, 64), kSchemaName, kAgentSchemaName));
    }
    JobSnapshot out;
    if (agent) read_tables(doc, root);
    out.job_id = str(doc, "job_id", root);
    out.expected_world_size =
        opt_int(doc, "expected_world_size", root, 0, std::numeric_limits<int>::max());
    const json& procs = array(doc, "processes", root, lim_.max_processes, true);
    const Path procs_path = at(root, "processes");
    out.processes.reserve(procs.size());
    for (std::size_t i = 0; i < procs.size(); ++i) {
      out.processes.push_back(process(procs[i], at(procs_path, i), agent));
    }
    if (const json* un = member(doc, "unreachable")) {
      const Path un_path = at(root, "unreachable");
      const json& arr = check_array(*un, un_path, lim_.max_processes);
      for (std::size_t i = 0; i < arr.size(); ++i) {
        const Path p = at(un_path, i);
        const json& u = object(arr[i], p);
        out.unreachable.push_back({str(u, "host", p), str(u, "reason", p)});
      }
    }
    out.diagnostics = diagnostics(doc, root);
    if (const json* ds = member(doc, "deaths")) {
      const Path dp = at(root, "deaths");
      const json& arr = check_array(*ds, dp, lim_.max_processes);
      for (std::size_t i = 0; i < arr.size(); ++i) out.deaths.push_back(death(arr[i], at(dp, i)));
    }
    return out;
  }

 private:
  // ---- primitive accessors -------------------------------------------------------------
  static const json* member(const json& obj, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
  }

  const json& object(const json& v, const Path& path) {
    if (!v.is_object()) fail(path, fmt::format("expected an object, got {}", type_name(v)));
    return v;
  }

  const json& check_array(const json& v, const Path& path, std::size_t max) {
    if (!v.is_array()) fail(path, fmt::format("expected an array, got {}", type_name(v)));
    if (v.size() > max)
      fail(path, fmt::format("{} entries, more than the limit of {}", v.size(), max));
    return v;
  }

  const json& array(const json& obj, const char* key, const Path& path, std::size_t max,
                    bool required) {
    static const json kEmpty = json::array();
    const json* v = member(obj, key);
    if (!v) {
      if (required) fail(at(path, key), "missing");
      return kEmpty;
    }
    return check_array(*v, at(path, key), max);
  }

  std::string string_value(const json& v, const Path& path) {
    if (!v.is_string()) fail(path, fmt::format("expected a string, got {}", type_name(v)));
    const auto& s = v.get_ref<const std::string&>();
    if (s.size() > lim_.max_string)
      fail(path, fmt::format("string of {} bytes, more than {}", s.size(), lim_.max_string));
    return s;
  }

  std::string str(const json& obj, const char* key, const Path& path) {
    const json* v = member(obj, key);
    return v ? string_value(*v, at(path, key)) : std::string();
  }

  std::optional<std::string> opt_str(const json& obj, const char* key, const Path& path) {
    const json* v = member(obj, key);
    if (!v) return std::nullopt;
    return string_value(*v, at(path, key));
  }

  std::int64_t int_value(const json& v, const Path& path, std::int64_t lo, std::int64_t hi) {
    std::int64_t x = 0;
    if (v.is_number_unsigned()) {
      auto u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(hi)) fail(path, fmt::format("{} is out of range", u));
      x = static_cast<std::int64_t>(u);
    } else if (v.is_number_integer()) {
      x = v.get<std::int64_t>();
    } else {
      fail(path, fmt::format("expected an integer, got {}", type_name(v)));
    }
    if (x < lo || x > hi) fail(path, fmt::format("{} is out of range", x));
    return x;
  }

  std::optional<int> opt_int(const json& obj, const char* key, const Path& path, int lo, int hi) {
    const json* v = member(obj, key);
    if (!v) return std::nullopt;
    return static_cast<int>(int_value(*v, at(path, key), lo, hi));
  }

  // A finite number in [lo, hi] (seconds, times): NaN cannot come from JSON, huge values can.
  std::optional<double> opt_number(const json& obj, const char* key, const Path& path, double lo,
                                   double hi) {
    const json* v = member(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_number())
      fail(at(path, key), fmt::format("expected a number, got {}", type_name(*v)));
    double x = v->get<double>();
    if (!(x >= lo && x <= hi)) fail(at(path, key), fmt::format("{} is out of range", x));
    return x;
  }

  std::optional<std::uint64_t> opt_bytes(const json& obj, const char* key, const Path& path) {
    const json* v = member(obj, key);
    if (!v) return std::nullopt;
    return static_cast<std::uint64_t>(
        int_value(*v, at(path, key), 0, std::numeric_limits<std::int64_t>::max()));
  }

  Death death(const json& v, const Path& path) {
    const json& o = object(v, path);
    constexpr int kMax = std::numeric_limits<int>::max();
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
    d.pid = opt_int(o, "pid", path, 0, kMax);
    d.comm = str(o, "comm", path);
    d.host = str(o, "host", path);
    d.rank = opt_int(o, "rank", path, 0, kMax);
    if (const json* s = member(o, "slurm")) {
      const Path sp = at(path, "slurm");
      const json& so = object(*s, sp);
      d.slurm_step = str(so, "step", sp);
      d.slurm_state = str(so, "state", sp);
      d.slurm_exit_code = str(so, "exit_code", sp);
    }
    return d;
  }

  std::vector<WaitEdge> waits_on(const json& obj, const Path& path) {
    std::vector<WaitEdge> out;
    if (!member(obj, "waits_on")) return out;
    const json& arr = array(obj, "waits_on", path, lim_.max_list, false);
    const Path list = at(path, "waits_on");
    constexpr int kMax = std::numeric_limits<int>::max();
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const Path ep = at(list, i);
      const json& eo = object(arr[i], ep);
      out.push_back({str(eo, "host", ep), opt_int(eo, "pid", ep, 0, kMax),
                     opt_int(eo, "rank", ep, 0, kMax), str(eo, "via", ep)});
    }
    return out;
  }

  std::optional<MemoryUsage> memory(const json& obj, const Path& path) {
    const json* v = member(obj, "memory");
    if (!v) return std::nullopt;
    const Path mp = at(path, "memory");
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

  int req_int(const json& obj, const char* key, const Path& path, int lo, int hi) {
    const json* v = member(obj, key);
    if (!v) fail(at(path, key), "missing");
    return static_cast<int>(int_value(*v, at(path, key), lo, hi));
  }

  bool boolean(const json& obj, const char* key, const Path& path) {
    return opt_bool(obj, key, path).value_or(false);
  }

  std::optional<bool> opt_bool(const json& obj, const char* key, const Path& path) {
    const json* v = member(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_boolean())
      fail(at(path, key), fmt::format("expected a boolean, got {}", type_name(*v)));
    return v->get<bool>();
  }

  std::uint64_t hex(const json& obj, const char* key, const Path& path) {
    const json* v = member(obj, key);
    if (!v) return 0;
    if (v->is_number_unsigned()) return v->get<std::uint64_t>();
    std::string s = string_value(*v, at(path, key));
    if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
      fail(at(path, key), "expected a \"0x..\" string");
    auto out = parse_int<std::uint64_t>(std::string_view(s).substr(2), 16);
    if (!out || s.find_first_of(" \t\r\n") != std::string::npos)
      fail(at(path, key), fmt::format("bad hex \"{}\"", s.substr(0, 40)));
    return *out;
  }

  char state(const json& obj, const char* key, const Path& path) {
    auto s = opt_str(obj, key, path);
    if (!s) return '?';
    if (s->size() != 1) fail(at(path, key), "expected a one-letter state");
    return (*s)[0];
  }

  std::vector<std::string> strings(const json& obj, const char* key, const Path& path) {
    const json& arr = array(obj, key, path, lim_.max_list, false);
    std::vector<std::string> out;
    out.reserve(arr.size());
    const Path list = at(path, key);
    for (std::size_t i = 0; i < arr.size(); ++i) out.push_back(string_value(arr[i], at(list, i)));
    return out;
  }

  // ---- model pieces --------------------------------------------------------------------
  Frame frame(const json& v, const Path& path) {
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
    f.line =
        opt_int(o, "line", path, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
    f.module = str(o, "module", path);
    f.pc = hex(o, "pc", path);
    f.offset = hex(o, "offset", path);
    f.build_id = str(o, "build_id", path);
    const json& locals = array(o, "locals", path, lim_.max_list, false);
    const Path locals_path = at(path, "locals");
    for (std::size_t i = 0; i < locals.size(); ++i) {
      const Path p = at(locals_path, i);
      const json& l = object(locals[i], p);
      f.locals.push_back({str(l, "name", p), str(l, "value", p)});
    }
    constexpr int kMaxInt = std::numeric_limits<int>::max();
    f.column = opt_int(o, "column", path, 0, kMaxInt);
    f.end_line = opt_int(o, "end_line", path, 0, kMaxInt);
    f.end_column = opt_int(o, "end_column", path, 0, kMaxInt);
    f.source = opt_str(o, "source", path);
    return f;
  }

  std::vector<Frame> frame_list(const json& arr, const Path& path) {
    check_array(arr, path, lim_.max_frames);
    count_frames(arr.size(), path);
    std::vector<Frame> out;
    out.reserve(arr.size());
    for (std::size_t i = 0; i < arr.size(); ++i) out.push_back(frame(arr[i], at(path, i)));
    return out;
  }

  void count_frames(std::size_t n, const Path& path) {
    total_frames_ += n;
    if (total_frames_ > lim_.max_total_frames) {
      fail(path, fmt::format("more than {} frames in the document", lim_.max_total_frames));
    }
  }

  // A stack: an inline array, or (agent documents) an index into the stacks table.
  // Threads that refer to one stack of the table share one FrameStack.
  FrameStack stack(const json& obj, const char* key, const Path& path, bool agent) {
    const json* v = member(obj, key);
    if (!v) return {};
    if (!agent) return frame_list(*v, at(path, key));
    auto idx =
        static_cast<std::size_t>(int_value(*v, at(path, key), 0, std::numeric_limits<int>::max()));
    if (idx >= stacks_.size()) fail(at(path, key), fmt::format("stack {} does not exist", idx));
    count_frames(stacks_[idx].size(), at(path, key));
    if (built_.size() < stacks_.size()) built_.resize(stacks_.size());
    FrameStack& out = built_[idx];
    if (out.empty() && !stacks_[idx].empty()) {
      std::vector<Frame> frames;
      frames.reserve(stacks_[idx].size());
      for (std::uint32_t fi : stacks_[idx]) frames.push_back(frames_[fi]);
      out = std::move(frames);
    }
    return out;
  }

  // Agent tables: "strings", then "frames" as compact arrays
  // [kind, function, file, line, module, pc, offset, build_id, locals, column, end_line,
  // end_column, source] (strings by index,
  // trailing defaults omitted), then "stacks" of frame indexes.
  void read_tables(const json& doc, const Path& root) {
    const json& strings = array(doc, "strings", root, lim_.max_table, true);
    const Path strings_path = at(root, "strings");
    strings_.reserve(strings.size());
    for (std::size_t i = 0; i < strings.size(); ++i)
      strings_.push_back(string_value(strings[i], at(strings_path, i)));
    const json& frames = array(doc, "frames", root, lim_.max_table, true);
    const Path frames_path = at(root, "frames");
    frames_.reserve(frames.size());
    for (std::size_t i = 0; i < frames.size(); ++i)
      frames_.push_back(compact_frame(frames[i], at(frames_path, i)));
    const json& stacks = array(doc, "stacks", root, lim_.max_table, true);
    const Path stacks_path = at(root, "stacks");
    stacks_.reserve(stacks.size());
    for (std::size_t i = 0; i < stacks.size(); ++i) {
      const Path p = at(stacks_path, i);
      const json& s = check_array(stacks[i], p, lim_.max_frames);
      std::vector<std::uint32_t> ids;
      ids.reserve(s.size());
      for (const json& v : s) {
        std::size_t id = index(v, frames_.size(), p, "frame");
        ids.push_back(static_cast<std::uint32_t>(id));
      }
      stacks_.push_back(std::move(ids));
    }
  }

  std::size_t index(const json& v, std::size_t size, const Path& path, const char* what) {
    if (!v.is_number_unsigned())
      fail(path, fmt::format("expected a {} index, got {}", what, type_name(v)));
    auto id = v.get<std::uint64_t>();
    if (id >= size) fail(path, fmt::format("{} {} does not exist", what, id));
    return static_cast<std::size_t>(id);
  }

  const std::string& table_string(const json& v, const Path& path) {
    return strings_[index(v, strings_.size(), path, "string")];
  }

  Frame compact_frame(const json& v, const Path& path) {
    const json& a = check_array(v, path, 13);
    if (a.empty()) fail(path, "empty frame");
    Frame f;
    std::int64_t kind = int_value(a[0], at(path, std::size_t{0}), 0, 3);
    f.kind = static_cast<FrameKind>(kind);
    auto slot = [&](std::size_t i) -> const json* {
      return i < a.size() && !a[i].is_null() ? &a[i] : nullptr;
    };
    if (auto* x = slot(1)) f.function = table_string(*x, at(path, 1));
    if (auto* x = slot(2)) f.file = table_string(*x, at(path, 2));
    if (auto* x = slot(3))
      f.line = static_cast<int>(int_value(*x, at(path, 3), std::numeric_limits<int>::min(),
                                          std::numeric_limits<int>::max()));
    if (auto* x = slot(4)) f.module = table_string(*x, at(path, 4));
    if (auto* x = slot(5)) f.pc = static_cast<std::uint64_t>(unsigned_value(*x, at(path, 5)));
    if (auto* x = slot(6)) f.offset = static_cast<std::uint64_t>(unsigned_value(*x, at(path, 6)));
    if (auto* x = slot(7)) f.build_id = table_string(*x, at(path, 7));
    if (auto* x = slot(8)) {
      const Path locals_path = at(path, 8);
      const json& locals = check_array(*x, locals_path, lim_.max_list);
      for (std::size_t i = 0; i < locals.size(); ++i) {
        const Path lp = at(locals_path, i);
        const json& l = check_array(locals[i], lp, 2);
        if (l.size() != 2) fail(lp, "expected [name, value]");
        f.locals.push_back(
            {table_string(l[0], at(lp, std::size_t{0})), table_string(l[1], at(lp, 1))});
      }
    }
    constexpr int kMaxInt = std::numeric_limits<int>::max();
    if (auto* x = slot(9)) f.column = static_cast<int>(int_value(*x, at(path, 9), 0, kMaxInt));
    if (auto* x = slot(10)) f.end_line = static_cast<int>(int_value(*x, at(path, 10), 0, kMaxInt));
    if (auto* x = slot(11))
      f.end_column = static_cast<int>(int_value(*x, at(path, 11), 0, kMaxInt));
    if (auto* x = slot(12)) f.source = table_string(*x, at(path, 12));
    return f;
  }

  std::uint64_t unsigned_value(const json& v, const Path& path) {
    if (!v.is_number_unsigned())
      fail(path, fmt::format("expected an unsigned integer, got {}", type_name(v)));
    return v.get<std::uint64_t>();
  }

  std::vector<Diagnostic> diagnostics(const json& obj, const Path& path) {
    const json& arr = array(obj, "diagnostics", path, lim_.max_list, false);
    const Path diags_path = at(path, "diagnostics");
    std::vector<Diagnostic> out;
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const Path p = at(diags_path, i);
      const json& d = object(arr[i], p);
      Diagnostic diag;
      std::string sev = str(d, "severity", p);
      if (sev == "info") diag.severity = Diagnostic::Severity::info;
      else if (sev == "error") diag.severity = Diagnostic::Severity::error;
      else if (sev == "warning" || sev.empty()) diag.severity = Diagnostic::Severity::warning;
      else fail(at(p, "severity"), fmt::format("unknown severity \"{}\"", sev.substr(0, 32)));
      diag.message = str(d, "message", p);
      diag.hint = str(d, "hint", p);
      diag.host = str(d, "host", p);
      diag.pid =
          opt_int(d, "pid", p, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
      diag.tid =
          opt_int(d, "tid", p, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
      out.push_back(std::move(diag));
    }
    return out;
  }

  ThreadSnapshot thread(const json& v, const Path& path, bool agent) {
    const json& o = object(v, path);
    ThreadSnapshot t;
    t.tid = req_int(o, "tid", path, 0, std::numeric_limits<int>::max());
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
    if (const json* ticks = member(o, "cpu_ticks")) {
      t.cpu_ticks = static_cast<std::uint64_t>(
          int_value(*ticks, at(path, "cpu_ticks"), 0, std::numeric_limits<std::int64_t>::max()));
    }
    t.frames = stack(o, "frames", path, agent);
    t.native_frames = stack(o, "native_frames", path, agent);
    t.kernel_frames = stack(o, "kernel_frames", path, agent);
    t.notes = strings(o, "notes", path);
    t.blocked_s = opt_number(o, "blocked_s", path, 0, 1e10);
    t.waits_on = waits_on(o, path);
    return t;
  }

  ProcessSnapshot process(const json& v, const Path& path, bool agent) {
    const json& o = object(v, path);
    constexpr int kMax = std::numeric_limits<int>::max();
    ProcessSnapshot p;
    p.host = str(o, "host", path);
    p.pid = req_int(o, "pid", path, 0, kMax);
    p.ppid = opt_int(o, "ppid", path, 0, kMax).value_or(0);
    if (const json* ticks = member(o, "start_ticks")) {
      p.start_ticks = static_cast<std::uint64_t>(
          int_value(*ticks, at(path, "start_ticks"), 0, std::numeric_limits<std::int64_t>::max()));
    }
    p.rank = opt_int(o, "rank", path, 0, kMax);
    p.world_size = opt_int(o, "world_size", path, 0, kMax);
    p.local_rank = opt_int(o, "local_rank", path, 0, kMax);
    p.launcher = str(o, "launcher", path);
    p.role = str(o, "role", path);
    p.cmdline = strings(o, "cmdline", path);
    p.exe = str(o, "exe", path);
    p.state = state(o, "state", path);
    if (const json* cpu = member(o, "cpu_percent")) {
      if (!cpu->is_number())
        fail(at(path, "cpu_percent"), fmt::format("expected a number, got {}", type_name(*cpu)));
      p.cpu_percent = cpu->get<double>();
    }
    p.progress = opt_str(o, "progress", path);
    p.captured_at = opt_number(o, "captured_at", path, 0, 1e11);
    p.memory = memory(o, path);
    if (const json* d = member(o, "death")) p.death = death(*d, at(path, "death"));
    p.tcp_connections = strings(o, "tcp_connections", path);
    if (const json* pause = member(o, "pause_us")) {
      p.pause_us =
          int_value(*pause, at(path, "pause_us"), 0, std::numeric_limits<std::int64_t>::max());
    }
    if (const json* py = member(o, "python")) {
      const Path pp = at(path, "python");
      const json& po = object(*py, pp);
      p.python = PythonInfo{str(po, "version", pp), boolean(po, "nonblocking", pp),
                            str(po, "locator", pp), opt_bool(po, "finalizing", pp).value_or(false),
                            opt_bool(po, "gc_collecting", pp).value_or(false)};
    }
    const json& tasks = array(o, "asyncio_tasks", path, lim_.max_list, false);
    const Path tasks_path = at(path, "asyncio_tasks");
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const Path tp = at(tasks_path, i);
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
        const Path sp = at(path, "signal");
        const json& so = object(*sig, sp);
        SignalInfo si;
        si.number = req_int(so, "number", sp, 0, kMax);
        si.name = str(so, "name", sp);
        if (member(so, "address")) si.address = hex(so, "address", sp);
        si.code = opt_int(so, "code", sp, std::numeric_limits<int>::min(), kMax).value_or(0);
        ci.signal = si;
      }
      ci.crashed_tid = opt_int(o, "crashed_tid", path, 0, kMax);
      ci.annotations = strings(o, "annotations", path);
      ci.omitted = strings(o, "omitted", path);
      p.core = std::move(ci);
    }
    const json& threads = array(o, "threads", path, lim_.max_threads, false);
    const Path threads_path = at(path, "threads");
    p.threads.reserve(threads.size());
    for (std::size_t i = 0; i < threads.size(); ++i) {
      p.threads.push_back(thread(threads[i], at(threads_path, i), agent));
    }
    p.diagnostics = diagnostics(o, path);
    return p;
  }

  const ReadLimits& lim_;
  std::size_t total_frames_ = 0;
  std::vector<std::string> strings_;                // agent string table
  std::vector<Frame> frames_;                       // agent frame table
  std::vector<std::vector<std::uint32_t>> stacks_;  // agent stack table
  std::vector<FrameStack> built_;                   // stacks_[i] as frames, once used
};

}  // namespace

Result<JobSnapshot> read_job_json(std::string_view text, const ReadLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return Error(Errc::bad_data,
                 fmt::format("JSON document of {} bytes is larger than the limit of {} bytes",
                             text.size(), limits.max_bytes));
  }
  if (!depth_within(text, limits.max_depth)) {
    return Error(Errc::bad_data,
                 fmt::format("JSON document nests deeper than {} levels", limits.max_depth));
  }
  try {
    json doc = json::parse(text.begin(), text.end());
    Converter conv(limits);
    return conv.job(doc);
  } catch (const BadDocument& e) {
    return Error(Errc::bad_data, e.message);
  } catch (const json::exception& e) {
    return Error(Errc::bad_data, fmt::format("malformed JSON: {}", e.what()));
  } catch (const std::bad_alloc&) {
    return Error(Errc::bad_data, "JSON document needs more memory than is available");
  } catch (const std::exception& e) {
    return Error(Errc::bad_data, fmt::format("unreadable JSON: {}", e.what()));
  }
}

}  // namespace hangscan
