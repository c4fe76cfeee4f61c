// `hangscan watch --slurm-job ID`: one long-lived node-local `watch` per node of the job (srun
// --overlap, as `hangscan --slurm-job` runs its agents), their reports merged. See watch_slurm.h.
#include <poll.h>
#include <signal.h>

#include <fmt/core.h>

#include <dirent.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "cli.h"
#include "fanout/slurm.h"
#include "fanout_cli.h"
#include "output.h"
#include "report/json_writer.h"
#include "stop_signals.h"
#include "watch/cluster_watch.h"
#include "watch_slurm.h"

namespace hangscan::cli {

namespace {

// Our children running `comm` (srun): run_command starts each in its own process group, so a
// terminal's SIGINT does not reach them; the front end forwards it.
std::vector<int> children_named(const std::string& comm) {
  std::vector<int> out;
  const int self = ::getpid();
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream f(fmt::format("/proc/{}/stat", pid));
    std::string stat;
    std::getline(f, stat);
    auto open = stat.find('(');
    auto close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == self && stat.substr(open + 1, close - open - 1) == comm) out.push_back(pid);
  }
  ::closedir(d);
  return out;
}

}  // namespace

int run_watch_slurm(const WatchSlurmRequest& r) {
  auto agent = resolve_agent_path("");
  if (!agent) {
    print_error(agent.error());
    return kExitNothing;
  }
  SlurmOptions s;
  s.job_id = r.job_id;
  s.agent_path = *agent;
  s.agent_subcommand = "watch";
  s.agent_args = {"--node-local",         "--for",     fmt::format("{}", r.seconds), "--rate",
                  std::to_string(r.rate), "--wait-ms", std::to_string(r.wait_ms)};
  // The window, the recorder's start-up and the report's way back; the node ends its window
  // 5 s before its own deadline (agent_timeout_for keeps a margin below ours).
  s.timeout = std::chrono::milliseconds(static_cast<long long>(r.seconds * 1000) + 30000);
  s.context = slurm_context_from_environment();
  s.max_rounds = 1;  // a node started later would watch another window: it is reported instead

  auto job = resolve_slurm_job(s, Deadline::after(std::chrono::seconds(30)));
  if (!job) {
    print_error(job.error());
    return job.error().code == Errc::usage ? kExitUsage : kExitNothing;
  }
  StopSignals stop;  // before the thread: it inherits the block, the signals come to us
  fmt::print(stderr,
             "hangscan: watching job {} on {} node{} ({}) for {} s; SIGINT ends every node's "
             "window and reports\n",
             job->id, job->nodes.size(), job->nodes.size() == 1 ? "" : "s", job->nodelist,
             r.seconds);
  std::fflush(stderr);
  std::atomic<bool> done{false};
  AgentAnswers answers;
  std::thread fanout([&] {
    answers = run_slurm_agents(s, job->nodes);
    done = true;
  });
  bool stopping = false;
  std::vector<int> told;
  while (!done) {
    pollfd p{stop.fd(), POLLIN, 0};
    ::poll(&p, 1, 200);
    if (stop.pending()) stopping = true;
    if (!stopping) continue;
    // srun forwards SIGUSR1 to its tasks (SIGINT would only print their status, SIGTERM
    // cancels the step and its output); each node-local watch ends its window on it and
    // still sends its report. Once per srun, also one started after the signal came.
    for (int pid : children_named("srun")) {
      if (std::find(told.begin(), told.end(), pid) != told.end()) continue;
      ::kill(pid, SIGUSR1);
      told.push_back(pid);
    }
  }
  fanout.join();

  std::vector<NodeWatchDocument> docs;
  for (auto& d : answers.documents) docs.push_back({d.node, std::move(d.text)});
  nlohmann::json merged = merge_node_watches(job->id, docs, std::move(answers.unreachable));
  for (const auto& d : answers.diagnostics) merged["diagnostics"].push_back(diagnostic_to_json(d));
  std::string text = r.json ? merged.dump(2) + "\n" : cluster_watch_text(merged);
  if (!write_stdout(text)) return kExitNothing;
  if (merged["processes"].empty()) return kExitNothing;
  return merged["unreachable"].empty() ? kExitComplete : kExitPartial;
}

}  // namespace hangscan::cli
