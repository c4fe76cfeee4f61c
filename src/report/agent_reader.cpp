// The fast agent reader: top level, processes and threads from the cursor, with the checks of
// SnapshotFields (which stays the reference: any doubt declines to it).
#include "report/agent_reader.h"
#include "util/parse_number.h"

#include <array>
#include <cstdint>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "report/agent_format.h"
#include "report/agent_tables.h"
#include "report/json_cursor.h"
#include "util/diagnostic.h"

namespace hangscan {

namespace {

using Kind = JsonCursor::Kind;

// The position of `key` in `names`, or -1 (a member the reference reader ignores too).
template <std::size_t N>
int key_index(std::string_view key, const std::array<std::string_view, N>& names) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == key) return static_cast<int>(i);
  }
  return -1;
}

// Members of one object: a key repeated (the DOM keeps the last) declines; a null value is an
// absent member, as BoundedFields::member() has it.
class Members {
 public:
  // The next known member with a non-null value: its index, or -1 at the end.
  template <std::size_t N>
  int next(JsonCursor& c, const std::array<std::string_view, N>& names) {
    std::string_view key;
    while (c.next_member(key)) {
      const int k = key_index(key, names);
      if (k < 0) {
        c.skip();
        continue;
      }
      if (seen_ >> k & 1u) throw Decline{};
      seen_ |= std::uint64_t{1} << k;
      if (c.peek() == Kind::null) {
        c.null();
        continue;
      }
      return k;
    }
    return -1;
  }

 private:
  std::uint64_t seen_ = 0;
};

constexpr std::array<std::string_view, 12> kTopKeys = {
    "schema", "job_id",      "expected_world_size", "processes", "strings",       "frames",
    "stacks", "unreachable", "diagnostics",         "deaths",    "agent_version", "agent_commit"};
constexpr std::array<std::string_view, 25> kProcessKeys = {
    "host",        "pid",      "ppid",          "start_ticks", "rank",    "world_size",
    "local_rank",  "launcher", "role",          "cmdline",     "exe",     "state",
    "cpu_percent", "progress", "captured_at",   "memory",      "death",   "tcp_connections",
    "pause_us",    "python",   "asyncio_tasks", "core",        "threads", "diagnostics",
    "container"};
constexpr std::array<std::string_view, 23> kThreadKeys = {
    "tid",           "name",          "state",
    "wchan",         "syscall",       "is_main",
    "gil",           "python_idle",   "python_name",
    "gc_collecting", "finalizing",    "crashed",
    "incomplete",    "cpu_ticks",     "frames",
    "native_frames", "kernel_frames", "notes",
    "blocked_s",     "waits_on",      "blocked_first_seen_at",
    "capture",       "python_capture"};
constexpr std::array<std::string_view, 6> kMemoryKeys = {
    "rss_bytes",          "peak_rss_bytes",     "cgroup",
    "cgroup_usage_bytes", "cgroup_limit_bytes", "gpu_bytes"};
constexpr std::array<std::string_view, 4> kContainerKeys = {"runtime", "id", "name", "pod_uid"};
constexpr std::array<std::string_view, 5> kPythonKeys = {"version", "nonblocking", "locator",
                                                         "finalizing", "gc_collecting"};
constexpr std::array<std::string_view, 6> kDiagnosticKeys = {"severity", "message", "hint",
                                                             "host",     "pid",     "tid"};
constexpr std::array<std::string_view, 5> kWaitKeys = {"host", "pid", "rank", "via", "tid"};
constexpr std::array<std::string_view, 2> kUnreachableKeys = {"host", "reason"};
constexpr std::array<std::string_view, 17> kDeathKeys = {
    "how",    "signal",      "signal_name", "exit_code", "core_dumped", "at",
    "cgroup", "limit_bytes", "rss_bytes",   "detail",    "core",        "evidence",
    "pid",    "comm",        "host",        "rank",      "slurm"};
constexpr std::array<std::string_view, 3> kSlurmKeys = {"step", "state", "exit_code"};

class AgentReader {
 public:
  AgentReader(std::string_view text, const ReadLimits& limits)
      : c_(text, limits.max_depth), lim_(limits), tables_(limits) {}

  JobSnapshot read(SharedStacks& shared);

 private:
  // Values (the cursor at a non-null value).
  std::string_view text_view();
  std::string text() { return std::string(text_view()); }
  std::vector<std::string> string_list();
  bool flag();
  double number_in(double lo, double hi);
  char state();
  // Arrays: calls `each()` per element, at most `max` of them.
  template <class F>
  void array(std::size_t max, F&& each);
  void object() {
    if (c_.peek() != Kind::object) decline();
    c_.begin_object();
  }

  void process();
  void thread(ProcessSnapshot& p);
  void stack_ref(std::uint32_t field);
  MemoryUsage memory();
  ContainerInfo container();
  PythonInfo python();
  Death death();
  std::vector<Diagnostic> diagnostics();
  std::vector<WaitEdge> waits_on();
  std::vector<UnreachableNode> unreachable();

  JsonCursor c_;
  const ReadLimits& lim_;
  AgentTables tables_;
  JobSnapshot out_;
  std::vector<StackRef> refs_;
};

std::string_view AgentReader::text_view() {
  std::string_view s = c_.string();
  if (s.size() > lim_.max_string) decline();
  return s;
}

std::vector<std::string> AgentReader::string_list() {
  std::vector<std::string> out;
  array(lim_.max_list, [&] { out.push_back(text()); });
  return out;
}

bool AgentReader::flag() {
  if (c_.peek() != Kind::boolean) decline();
  return c_.boolean();
}

double AgentReader::number_in(double lo, double hi) {
  const double x = c_.number().as_double();
  if (!(x >= lo && x <= hi)) decline();
  return x;
}

char AgentReader::state() {
  std::string_view s = text_view();
  if (s.size() != 1) decline();
  return s[0];
}

template <class F>
void AgentReader::array(std::size_t max, F&& each) {
  if (c_.peek() != Kind::array) decline();
  c_.begin_array();
  for (std::size_t n = 0; c_.next_element(); ++n) {
    if (n >= max) decline();
    each();
  }
}

JobSnapshot AgentReader::read(SharedStacks& shared) {
  object();
  Members m;
  bool agent = false, processes = false;
  for (int k; (k = m.next(c_, kTopKeys)) >= 0;) {
    switch (k) {
      case 0:
        agent = text_view() == kAgentSchemaName;
        if (!agent) decline();
        break;
      case 1:
        out_.job_id = text();
        break;
      case 2:
        out_.expected_world_size = static_cast<int>(c_.integer(0, kIntMax));
        break;
      case 3:
        processes = true;
        array(lim_.max_processes, [&] { process(); });
        break;
      case 4:
        tables_.read_strings(c_);
        break;
      case 5:
        tables_.read_frames(c_);
        break;
      case 6:
        tables_.read_stacks(c_);
        break;
      case 7:
        out_.unreachable = unreachable();
        break;
      case 8:
        out_.diagnostics = diagnostics();
        break;
      case 9:
        array(lim_.max_processes, [&] { out_.deaths.push_back(death()); });
        break;
      default:
        c_.skip();  // the agent's version, checked before the document is read
        break;
    }
  }
  c_.finish();
  if (!agent || !processes) decline();
  tables_.resolve(refs_, out_, shared);
  return std::move(out_);
}

void AgentReader::process() {
  object();
  ProcessSnapshot& p = out_.processes.emplace_back();
  bool has_pid = false;
  Members m;
  for (int k; (k = m.next(c_, kProcessKeys)) >= 0;) {
    switch (k) {
      case 0:
        p.host = text();
        break;
      case 1:
        p.pid = static_cast<int>(c_.integer(0, kIntMax));
        has_pid = true;
        break;
      case 2:
        p.ppid = static_cast<int>(c_.integer(0, kIntMax));
        break;
      case 3:
        p.start_ticks = static_cast<std::uint64_t>(c_.integer(0, kInt64Max));
        break;
      case 4:
        p.rank = static_cast<int>(c_.integer(0, kIntMax));
        break;
      case 5:
        p.world_size = static_cast<int>(c_.integer(0, kIntMax));
        break;
      case 6:
        p.local_rank = static_cast<int>(c_.integer(0, kIntMax));
        break;
      case 7:
        p.launcher = text();
        break;
      case 8:
        p.role = text();
        break;
      case 9:
        p.cmdline = string_list();
        break;
      case 10:
        p.exe = text();
        break;
      case 11:
        p.state = state();
        break;
      case 12:
        p.cpu_percent = c_.number().as_double();
        break;
      case 13:
        p.progress = text();
        break;
      case 14:
        p.captured_at = number_in(0, 1e11);
        break;
      case 15:
        p.memory = memory();
        break;
      case 16:
        p.death = death();
        break;
      case 17:
        p.tcp_connections = string_list();
        break;
      case 18:
        p.pause_us = c_.integer(0, kInt64Max);
        break;
      case 19:
        p.python = python();
        break;
      case 20:
        array(0, [] {});
        break;  // asyncio tasks: left to the reference reader
      case 22:
        array(lim_.max_threads, [&] { thread(p); });
        break;
      case 23:
        p.diagnostics = diagnostics();
        break;
      case 24:
        p.container = container();
        break;
      default:
        decline();  // core: left to the reference reader
    }
  }
  if (!has_pid) decline();
}

void AgentReader::thread(ProcessSnapshot& p) {
  object();
  ThreadSnapshot& t = p.threads.emplace_back();
  bool has_tid = false;
  Members m;
  for (int k; (k = m.next(c_, kThreadKeys)) >= 0;) {
    switch (k) {
      case 0:
        t.tid = static_cast<int>(c_.integer(0, kIntMax));
        has_tid = true;
        break;
      case 1:
        t.name = text();
        break;
      case 2:
        t.state = state();
        break;
      case 3:
        t.wchan = text();
        break;
      case 4:
        t.syscall = text();
        break;
      case 5:
        t.is_main = flag();
        break;
      case 6:
        t.gil = flag();
        break;
      case 7:
        t.python_idle = flag();
        break;
      case 8:
        t.python_name = text();
        break;
      case 9:
        t.gc_collecting = flag();
        break;
      case 10:
        t.finalizing = flag();
        break;
      case 11:
        t.crashed = flag();
        break;
      case 12:
        t.incomplete = flag();
        break;
      case 13:
        t.cpu_ticks = static_cast<std::uint64_t>(c_.integer(0, kInt64Max));
        break;
      case 14:
      case 15:
      case 16:
        stack_ref(static_cast<std::uint32_t>(k - 14));
        break;
      case 17:
        t.notes = string_list();
        break;
      case 18:
        t.blocked_s = number_in(0, 1e10);
        break;
      case 19:
        t.waits_on = waits_on();
        break;
      case 20:
        t.blocked_first_seen_at = number_in(0, 1e10);
        break;
      case 21:
        t.capture = text();
        break;
      default:
        t.python_capture = text();
        break;
    }
  }
  if (!has_tid) decline();
}

// A thread's stack: an index into "stacks", resolved when the tables are known.
void AgentReader::stack_ref(std::uint32_t field) {
  const auto process = static_cast<std::uint32_t>(out_.processes.size() - 1);
  const auto thread = static_cast<std::uint32_t>(out_.processes.back().threads.size() - 1);
  const auto stack = static_cast<std::uint32_t>(c_.integer(0, kIntMax));
  // Fields are resolved in the reference reader's order: frames, native, kernel per thread.
  auto it = refs_.end();
  while (it != refs_.begin() && (it - 1)->process == process && (it - 1)->thread == thread &&
         (it - 1)->field > field) {
    --it;
  }
  refs_.insert(it, StackRef{process, thread, field, stack});
}

MemoryUsage AgentReader::memory() {
  object();
  MemoryUsage mu;
  Members m;
  for (int k; (k = m.next(c_, kMemoryKeys)) >= 0;) {
    if (k == 2) {
      mu.cgroup = text();
      continue;
    }
    const auto v = static_cast<std::uint64_t>(c_.integer(0, kInt64Max));
    (k == 0   ? mu.rss_bytes
     : k == 1 ? mu.peak_rss_bytes
     : k == 3 ? mu.cgroup_usage_bytes
     : k == 4 ? mu.cgroup_limit_bytes
              : mu.gpu_bytes) = v;
  }
  return mu;
}

ContainerInfo AgentReader::container() {
  object();
  ContainerInfo ci;
  Members m;
  for (int k; (k = m.next(c_, kContainerKeys)) >= 0;) {
    (k == 0 ? ci.runtime : k == 1 ? ci.id : k == 2 ? ci.name : ci.pod_uid) = text();
  }
  return ci;
}

PythonInfo AgentReader::python() {
  object();
  PythonInfo py;
  Members m;
  for (int k; (k = m.next(c_, kPythonKeys)) >= 0;) {
    switch (k) {
      case 0:
        py.version = text();
        break;
      case 1:
        py.nonblocking = flag();
        break;
      case 2:
        py.locator = text();
        break;
      case 3:
        py.finalizing = flag();
        break;
      default:
        py.gc_collecting = flag();
        break;
    }
  }
  return py;
}

Death AgentReader::death() {
  object();
  Death d;
  Members m;
  for (int k; (k = m.next(c_, kDeathKeys)) >= 0;) {
    switch (k) {
      case 0:
        d.how = text();
        break;
      case 1:
        d.signal = static_cast<int>(c_.integer(0, 128));
        break;
      case 2:
        d.signal_name = text();
        break;
      case 3:
        d.exit_code = static_cast<int>(c_.integer(0, 255));
        break;
      case 4:
        d.core_dumped = flag();
        break;
      case 5:
        d.at = number_in(0, 1e11);
        break;
      case 6:
        d.cgroup = text();
        break;
      case 7:
        d.limit_bytes = static_cast<std::uint64_t>(c_.integer(0, kInt64Max));
        break;
      case 8:
        d.rss_bytes = static_cast<std::uint64_t>(c_.integer(0, kInt64Max));
        break;
      case 9:
        d.detail = text();
        break;
      case 10:
        d.core = text();
        break;
      case 11:
        d.evidence = string_list();
        break;
      case 12:
        d.pid = static_cast<int>(c_.integer(0, kIntMax));
        break;
      case 13:
        d.comm = text();
        break;
      case 14:
        d.host = text();
        break;
      case 15:
        d.rank = static_cast<int>(c_.integer(0, kIntMax));
        break;
      default: {
        object();
        Members sm;
        for (int j; (j = sm.next(c_, kSlurmKeys)) >= 0;)
          (j == 0 ? d.slurm_step : j == 1 ? d.slurm_state : d.slurm_exit_code) = text();
      }
    }
  }
  return d;
}

std::vector<Diagnostic> AgentReader::diagnostics() {
  std::vector<Diagnostic> out;
  array(lim_.max_list, [&] {
    object();
    Diagnostic& d = out.emplace_back();
    Members m;
    for (int k; (k = m.next(c_, kDiagnosticKeys)) >= 0;) {
      switch (k) {
        case 0: {
          if (auto s = severity_named(text_view())) d.severity = *s;
          else decline();
          break;
        }
        case 1:
          d.message = text();
          break;
        case 2:
          d.hint = text();
          break;
        case 3:
          d.host = text();
          break;
        case 4:
          d.pid = static_cast<int>(c_.integer(kIntMin, kIntMax));
          break;
        default:
          d.tid = static_cast<int>(c_.integer(kIntMin, kIntMax));
          break;
      }
    }
  });
  return out;
}

std::vector<WaitEdge> AgentReader::waits_on() {
  std::vector<WaitEdge> out;
  array(lim_.max_list, [&] {
    object();
    WaitEdge& e = out.emplace_back();
    Members m;
    for (int k; (k = m.next(c_, kWaitKeys)) >= 0;) {
      switch (k) {
        case 0:
          e.host = text();
          break;
        case 1:
          e.pid = static_cast<int>(c_.integer(0, kIntMax));
          break;
        case 2:
          e.rank = static_cast<int>(c_.integer(0, kIntMax));
          break;
        case 3:
          e.via = text();
          break;
        default:
          e.tid = static_cast<int>(c_.integer(0, kIntMax));
          break;
      }
    }
  });
  return out;
}

std::vector<UnreachableNode> AgentReader::unreachable() {
  std::vector<UnreachableNode> out;
  array(lim_.max_processes, [&] {
    object();
    UnreachableNode& u = out.emplace_back();
    Members m;
    for (int k; (k = m.next(c_, kUnreachableKeys)) >= 0;) (k == 0 ? u.host : u.reason) = text();
  });
  return out;
}

}  // namespace

std::optional<JobSnapshot> read_agent_fast(std::string_view text, const ReadLimits& limits,
                                           SharedStacks& shared) {
  try {
    AgentReader reader(text, limits);
    return reader.read(shared);
  } catch (const Decline&) {
  } catch (const JsonCursor::Stop&) {
  } catch (const std::bad_alloc&) {
  }
  return std::nullopt;
}

}  // namespace hangscan
