// The fast agent reader: top level, processes and threads from the cursor, with the checks of
// SnapshotFields (which stays the reference: any doubt declines to it).
#include "report/agent_reader.h"
#include "util/parse_number.h"

#include <array>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "report/agent_format.h"
#include "report/agent_tables.h"
#include "report/agent_values.h"
#include "report/json_cursor.h"

namespace hangscan {

namespace {

constexpr std::array<std::string_view, 12> kTopKeys = {
    "schema", "job_id",      "expected_world_size", "processes", "strings",       "frames",
    "stacks", "unreachable", "diagnostics",         "deaths",    "agent_version", "agent_commit"};
constexpr std::array<std::string_view, 25> kProcessKeys = {
    "host",        "pid",      "ppid",          "start_ticks", "rank",    "world_size",
    "local_rank",  "launcher", "role",          "cmdline",     "exe",     "state",
    "cpu_percent", "progress", "captured_at",   "memory",      "death",   "tcp_connections",
    "pause_us",    "python",   "asyncio_tasks", "core",        "threads", "diagnostics",
    "container"};
constexpr std::array<std::string_view, 22> kThreadKeys = {
    "tid",           "name",          "state",
    "wchan",         "syscall",       "is_main",
    "gil",           "python_idle",   "python_name",
    "gc_collecting", "finalizing",    "crashed",
    "incomplete",    "cpu_ticks",     "frames",
    "native_frames", "kernel_frames", "notes",
    "blocked_s",     "waits_on",      "blocked_first_seen_at",
    "capture"};

// The document's structure: the top level, its processes and their threads; the values and
// records on the way are AgentValues'.
class AgentReader : AgentValues {
 public:
  AgentReader(std::string_view text, const ReadLimits& limits)
      : AgentValues(text, limits), tables_(limits) {}

  JobSnapshot read(SharedStacks& shared);

 private:
  void process();
  void thread(ProcessSnapshot& p);
  void stack_ref(std::uint32_t field);

  AgentTables tables_;
  JobSnapshot out_;
  std::vector<StackRef> refs_;
};

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
      default:
        t.capture = text();
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
