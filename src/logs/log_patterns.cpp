#include "logs/log_patterns.h"

#include <algorithm>
#include <functional>

#include <ctime>

#include "util/parse_number.h"

namespace hangscan {

namespace {

std::optional<long long> number(const std::string& s) { return parse_int<long long>(s); }

std::optional<int> small(const std::string& s) { return parse_int_in<int>(s, 0, 1 << 24); }

// Every entry's format is quoted from its producer's source; the citation says where.
std::vector<LinePattern> build_table() {
  std::vector<LinePattern> t;
  // torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, WorkNCCL::checkTimeout (1.10-2.x):
  // "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=S, OpType=OP, ...) ran for
  // N milliseconds before timing out."
  t.push_back(
      {LogKind::collective_timeout, "Watchdog caught collective operation timeout",
       Pattern(R"(WorkNCCL\(SeqNum=(\d+), OpType=([A-Z_]+).{0,200}?\) ran for (\d+) milli)"),
       [](const auto& g, LogEvent& e) {
         e.seq = number(g[1]);
         e.op = g[2];
         e.what = "timed out after " + g[3] + " ms";
       },
       "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (WorkNCCL::checkTimeout)"});
  // ProcessGroupNCCL.cpp, the watchdog's exception and the heartbeat monitor (2.2-2.x):
  // "... at work: S, last enqueued NCCL work: E, last completed NCCL work: C."
  t.push_back({LogKind::seq_status, "ast enqueued NCCL work: ",
               Pattern(R"((?:at work: (\d+), )?[Ll]ast enqueued NCCL work: (-?\d+), last )"
                       R"(completed NCCL work: (-?\d+))"),
               [](const auto& g, LogEvent& e) {
                 if (!g[1].empty()) e.seq = number(g[1]);
                 e.last_enqueued = number(g[2]);
                 e.last_completed = number(g[3]);
               },
               "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (watchdog, HeartbeatMonitor)"});
  // ProcessGroupNCCL.cpp, HeartbeatMonitor::getNCCLWatchdogTimeoutErrorMsg (2.4-2.x):
  // "Received a dump signal due to a collective timeout from rank R and we will try ..."
  t.push_back({LogKind::dump_signal, "dump signal due to a collective timeout from",
               Pattern(R"(collective timeout from\s+rank (\d+))"),
               [](const auto& g, LogEvent& e) { e.peer_rank = small(g[1]); },
               "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (HeartbeatMonitor)"});
  // gloo/transport/tcp/unbound_buffer.cc, UnboundBuffer::waitRecv/waitSend:
  // "Timed out waiting Nms for recv operation to complete"
  t.push_back({LogKind::gloo_timeout, "Timed out waiting ",
               Pattern(R"(Timed out waiting (\d+)ms for (recv|send) operation to complete)"),
               [](const auto& g, LogEvent& e) {
                 e.op = g[2];
                 e.what = "timed out after " + g[1] + " ms waiting to " + g[2];
               },
               "gloo/transport/tcp/unbound_buffer.cc"});
  // gloo/transport/tcp/pair.cc, Pair::handleRemotePairConnect / read: "Connection closed by
  // peer [ADDR]:PORT"
  t.push_back({LogKind::peer_closed, "Connection closed by peer",
               Pattern(R"(Connection closed by peer \[?([0-9A-Fa-f.:]+?)\]?:(\d+))"),
               [](const auto& g, LogEvent& e) { e.what = g[1] + ":" + g[2]; },
               "gloo/transport/tcp/pair.cc"});
  // c10/cuda/CUDAException.h (C10_CUDA_CHECK) and c10/cuda/CUDACachingAllocator.cpp:
  // "CUDA error: MSG", "CUDA out of memory. Tried to allocate ..."
  t.push_back({LogKind::cuda_error, "CUDA ",
               Pattern(R"((CUDA out of memory|CUDA error: [^\r\n]{1,200}))"),
               [](const auto& g, LogEvent& e) { e.what = g[1]; },
               "c10/cuda/CUDAException.h, c10/cuda/CUDACachingAllocator.cpp"});
  // NCCL src/debug.cc, ncclDebugLog: "%s:%d:%d [%d] NCCL WARN %s" (host, pid, tid, device)
  t.push_back({LogKind::nccl_warn, " NCCL WARN ",
               Pattern(R"(([^\s:]+):(\d+):(\d+) \[(\d+)\] NCCL WARN (.{0,300}))"),
               [](const auto& g, LogEvent& e) {
                 e.host = g[1];
                 e.pid = small(g[2]);
                 e.what = g[5];
               },
               "nccl src/debug.cc (ncclDebugLog)"});
  // NCCL src/init.cc, ncclCommInitRankFunc: "comm %p rank %d nranks %d cudaDev %d ... -
  // Init COMPLETE"
  t.push_back({LogKind::nccl_init, "Init COMPLETE",
               Pattern(R"(([^\s:]+):(\d+):(\d+) \[\d+\] NCCL INFO comm 0x[0-9a-f]+ rank (\d+) )"
                       R"(nranks (\d+))"),
               [](const auto& g, LogEvent& e) {
                 e.host = g[1];
                 e.pid = small(g[2]);
                 e.peer_rank = small(g[4]);
               },
               "nccl src/init.cc (ncclCommInitRankFunc)"});
  // slurm src/slurmd/slurmstepd/req.c and mgr.c: "*** JOB %u ON %s CANCELLED AT %s DUE TO
  // TIME LIMIT ***" (also STEP, and without a reason when cancelled by a user)
  t.push_back(
      {LogKind::slurm_cancelled, "CANCELLED AT",
       Pattern(R"(\*\*\* (JOB|STEP) (\S+) ON (\S+) CANCELLED AT (\S+)(?: DUE TO ([A-Z ]+?))?)"
               R"((?: \*\*\*| by ))"),
       [](const auto& g, LogEvent& e) {
         e.host = g[3];
         e.op = g[5].empty() ? "cancelled" : g[5];
         e.what = g[1] == "JOB" ? "job " + g[2] : "step " + g[2];
         e.time = parse_log_time(g[4]);
       },
       "slurm src/slurmd/slurmstepd/req.c, mgr.c"});
  // slurm src/srun/srun_job.c / launch plugins: "srun: error: NODE: task N: Killed",
  // "... tasks 0-3: Exited with exit code 1", "... task 2: Out Of Memory"
  t.push_back(
      {LogKind::srun_task, "srun: error: ",
       Pattern(R"(srun: error: (\S+): tasks? ([0-9,\-]+): (Killed|Out Of Memory|Terminated|)"
               R"(Segmentation fault|Aborted|Exited with exit code (\d+)))"),
       [](const auto& g, LogEvent& e) {
         e.host = g[1];
         e.what = g[2];  // the task list; the reader splits it into ranks
         e.op = g[4].empty() ? g[3] : "Exited";
         if (!g[4].empty()) e.exit_code = small(g[4]);
       },
       "slurm src/plugins/launch/slurm/launch_slurm.c (_task_finish)"});
  // slurm src/plugins/task/cgroup/task_cgroup_memory.c: "Detected %u oom_kill event%s in %ps."
  // (older releases); 22.05's slurmstepd writes "Detected 1 oom-kill event(s) in StepId=J.S.
  // Some of your processes may have been killed by the cgroup out-of-memory handler." (a real
  // run: tests/unit/fixtures/logs/slurm-26601.out)
  t.push_back({LogKind::slurm_oom, "kill event",
               Pattern(R"(Detected (\d+) oom[_-]kill events?(?:\(s\))? in (\S+?)\.?(?: |$))"),
               [](const auto& g, LogEvent& e) {
                 e.what = g[2];
                 e.op = "Out Of Memory";
               },
               "slurm src/plugins/task/cgroup/task_cgroup_memory.c"});
  // torch distributed/elastic/multiprocessing/api.py (1.9-2.x), SubprocessContext._close:
  // "Sending process {pid} closing signal {death_sig.name}" (torchrun ending its workers after
  // one failed; the pid is the worker's, its rank comes from a capture's pid map)
  t.push_back({LogKind::torchrun_stop, "closing signal ",
               Pattern(R"(Sending process (\d+) closing signal (SIG[A-Z0-9]{2,8})\b)"),
               [](const auto& g, LogEvent& e) {
                 e.pid = small(g[1]);
                 e.op = g[2];
               },
               "torch distributed/elastic/multiprocessing/api.py (SubprocessContext._close)"});
  // linux mm/oom_kill.c, __oom_kill_process: "%s: Killed process %d (%s) total-vm:..."
  // ("Out of memory" or "Memory cgroup out of memory")
  t.push_back({LogKind::kernel_oom, "Killed process ",
               Pattern(R"((Memory cgroup out of memory|Out of memory): Killed process (\d+) )"
                       R"(\(([^)]{0,64})\))"),
               [](const auto& g, LogEvent& e) {
                 e.pid = small(g[2]);
                 e.op = g[1];
                 e.what = g[3];
               },
               "linux mm/oom_kill.c (__oom_kill_process)"});
  return t;
}

std::optional<int> digits_until(std::string_view s, std::size_t from, char end, std::size_t& at) {
  std::size_t i = from;
  while (i < s.size() && i - from < 8 && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == from || i >= s.size() || s[i] != end) return std::nullopt;
  at = i + 1;
  return parse_int_in<int>(s.substr(from, i - from), 0, 1 << 24);
}

// "[rank3]:" / "[default3]:" (torchrun), "3: " (srun --label).
std::optional<int> launcher_label(std::string_view& line) {
  std::size_t at = 0;
  for (std::string_view tag : {std::string_view("[rank"), std::string_view("[default")}) {
    if (line.substr(0, tag.size()) == tag) {
      auto r = digits_until(line, tag.size(), ']', at);
      if (r && at < line.size() && line[at] == ':') {
        line.remove_prefix(at + 1);
        return r;
      }
      return std::nullopt;
    }
  }
  std::size_t lead = line.find_first_not_of(' ');
  if (lead > 6) return std::nullopt;  // npos (all spaces) too
  auto r = digits_until(line, lead, ':', at);
  if (r && at < line.size() && line[at] == ' ') {
    line.remove_prefix(at + 1);
    return r;
  }
  return std::nullopt;
}

// PyTorch's log prefix: "[PG ID 0 PG GUID 0(default_pg) Rank 5]", "[PG 0 Rank 5]", "[Rank 5]".
void pytorch_prefix(std::string_view line, LinePrefix& p) {
  std::size_t at = line.find("Rank ");
  if (at == std::string_view::npos || line.find('[') > at) return;
  std::size_t open = line.rfind('[', at);
  std::size_t end = 0;
  auto rank = digits_until(line, at + 5, ']', end);
  if (!rank) return;
  std::string_view inside = line.substr(open + 1, at - open - 1);
  if (!inside.empty() && inside.substr(0, 3) != "PG ") return;
  if (!p.rank) p.rank = rank;
  if (inside.substr(0, 3) == "PG ") {
    std::string_view id = inside.substr(3);
    if (id.substr(0, 3) == "ID ") id.remove_prefix(3);
    std::size_t sp = id.find(' ');
    p.pg = parse_int_in<int>(id.substr(0, sp), 0, 1 << 24);
  }
}

}  // namespace

const std::vector<LinePattern>& log_patterns() {
  static const std::vector<LinePattern> table = build_table();
  return table;
}

bool same_host(std::string_view a, std::string_view b) {
  return a.substr(0, a.find('.')) == b.substr(0, b.find('.'));
}

std::optional<double> parse_log_time(std::string_view s) {
  if (!s.empty() && s.front() == '[') s.remove_prefix(1);
  if (s.size() < 19) return std::nullopt;
  auto field = [&](std::size_t at, std::size_t n, int lo, int hi) {
    return parse_int_in<int>(s.substr(at, n), lo, hi);
  };
  char sep = s[10];
  if (s[4] != '-' || s[7] != '-' || (sep != ' ' && sep != 'T' && sep != '_') || s[13] != ':' ||
      s[16] != ':')
    return std::nullopt;
  auto y = field(0, 4, 1970, 9999), mo = field(5, 2, 1, 12), d = field(8, 2, 1, 31);
  auto h = field(11, 2, 0, 23), mi = field(14, 2, 0, 59), se = field(17, 2, 0, 60);
  if (!y || !mo || !d || !h || !mi || !se) return std::nullopt;
  std::tm tm{};
  tm.tm_year = *y - 1900;
  tm.tm_mon = *mo - 1;
  tm.tm_mday = *d;
  tm.tm_hour = *h;
  tm.tm_min = *mi;
  tm.tm_sec = *se;
  double t = static_cast<double>(::timegm(&tm));
  if (s.size() > 20 && (s[19] == '.' || s[19] == ',')) {
    std::size_t n = 20;
    double scale = 0.1;
    while (n < s.size() && n < 29 && s[n] >= '0' && s[n] <= '9') {
      t += (s[n] - '0') * scale;
      scale /= 10;
      ++n;
    }
  }
  return t;
}

LinePrefix parse_line_prefix(std::string_view line, bool with_time) {
  LinePrefix p;
  p.rank = launcher_label(line);
  p.rest = line;
  std::size_t text = line.find_first_not_of(' ');
  if (with_time) p.time = parse_log_time(line.substr(text == std::string_view::npos ? 0 : text));
  pytorch_prefix(line.substr(0, 400), p);
  return p;
}

namespace {

// One Boyer-Moore-Horspool searcher per keyword, built once: it skips up to a keyword's length
// per step, where string_view::find (memchr on the first byte, then memcmp) stops at every
// common letter; the keyword test is nearly all of the reader's time on ordinary lines.
using KeywordSearcher = std::boyer_moore_horspool_searcher<std::string_view::const_iterator>;

const std::vector<KeywordSearcher>& keyword_searchers() {
  static const std::vector<KeywordSearcher> searchers = [] {
    std::vector<KeywordSearcher> out;
    for (const LinePattern& lp : log_patterns())
      out.emplace_back(lp.keyword.begin(), lp.keyword.end());
    return out;
  }();
  return searchers;
}

}  // namespace

std::optional<LogEvent> classify_log_line(std::string_view line) {
  const std::vector<KeywordSearcher>& searchers = keyword_searchers();
  const std::vector<LinePattern>& patterns = log_patterns();
  for (std::size_t k = 0; k < searchers.size(); ++k) {
    const LinePattern& lp = patterns[k];
    if (std::search(line.begin(), line.end(), searchers[k]) == line.end()) continue;
    auto groups = lp.pattern.search_groups(line.substr(0, 4096));
    if (!groups) continue;
    LogEvent e;
    e.kind = lp.kind;
    lp.fill(*groups, e);
    LinePrefix p = parse_line_prefix(line);
    if (!e.rank) e.rank = p.rank;
    e.pg = p.pg;
    if (!e.time) e.time = p.time;
    e.text = std::string(line.substr(0, kMaxEventText));
    return e;
  }
  return std::nullopt;
}

}  // namespace hangscan
