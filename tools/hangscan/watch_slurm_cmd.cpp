// `hangscan watch --slurm-job ID`: one long-lived node-local `watch` per node of the job (srun
// --overlap, as `hangscan --slurm-job` runs its agents), their reports merged. See watch_slurm.h.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "cli.h"
#include "fanout/launcher.h"
#include "fanout/slurm.h"
#include "fanout_cli.h"
#include "jobs/capture_flags.h"
#include "output.h"
#include "proc/process_tree.h"
#include "report/json_writer.h"
#include "stall_bundle.h"
#include "stop_signals.h"
#include "watch/cluster_watch.h"
#include "watch_slurm.h"

namespace hangscan::cli {

namespace {

// Our children running `comm` (srun): run_command starts each in its own process group, so a
// terminal's SIGINT does not reach them; the front end forwards it.
std::vector<int> children_named(const std::string& comm) {
  std::vector<int> out;
  const ProcessTree tree = ProcessTree::scan();
  for (int pid : tree.children(::getpid())) {
    if (tree.find(pid)->comm == comm) out.push_back(pid);
  }
  return out;
}

// The node-local watches' srun step for `r` (`extra`: more node-local arguments); the node
// ends its window 5 s before its own deadline (agent_timeout_for keeps a margin below ours).
Result<SlurmOptions> node_watch_options(const WatchSlurmRequest& r, double window_s,
                                        std::vector<std::string> extra) {
  auto agent = resolve_agent_path("");
  if (!agent) return agent.error();
  SlurmOptions s;
  s.job_id = r.job_id;
  s.agent_path = *agent;
  s.agent_subcommand = "watch";
  s.agent_args = {"--node-local",         "--for",     fmt::format("{}", window_s), "--rate",
                  std::to_string(r.rate), "--wait-ms", std::to_string(r.wait_ms)};
  s.agent_args.insert(s.agent_args.end(), extra.begin(), extra.end());
  // The window, the recorder's start-up and the report's way back.
  s.timeout = std::chrono::milliseconds(static_cast<long long>(window_s * 1000) + 30000);
  s.context = slurm_context_from_environment();
  s.max_rounds = 1;  // a node started later would watch another window: it is reported instead
  return s;
}

// Runs the node-local watches until every node reported. A stop signal (`stopped` set) or
// `end_now()` turning true ends every node's window: srun forwards SIGUSR1 to its tasks
// (SIGINT would only print their status, SIGTERM cancels the step and its output); each
// node-local watch ends its window on it and still sends its report.
AgentAnswers run_node_watches(const SlurmOptions& s, const SlurmJob& job, StopSignals& stop,
                              const std::function<bool()>& end_now, bool& stopped) {
  std::atomic<bool> done{false};
  AgentAnswers answers;
  std::thread fanout([&] {
    answers = run_slurm_agents(s, job.nodes);
    done = true;
  });
  bool stopping = false;
  std::optional<std::chrono::steady_clock::time_point> last_told;
  while (!done) {
    pollfd p{stop.fd(), POLLIN, 0};
    ::poll(&p, 1, 200);
    if (stop.pending()) stopped = stopping = true;
    if (!stopping && end_now && end_now()) stopping = true;
    if (!stopping) continue;
    // Every second until the step ends: srun drops a signal that comes before its tasks run
    // (a stale --log is seen at once), and the node-local watches ignore it once their window
    // ended.
    auto now = std::chrono::steady_clock::now();
    if (last_told && now - *last_told < std::chrono::seconds(1)) continue;
    last_told = now;
    for (int pid : children_named("srun")) ::kill(pid, SIGUSR1);
  }
  fanout.join();
  return answers;
}

// The nodes' reports merged into one (merge_node_watches), with the run's own diagnostics.
nlohmann::json merge_answers(const std::string& job_id, AgentAnswers answers) {
  std::vector<NodeWatchDocument> docs;
  for (auto& d : answers.documents) docs.push_back({d.node, std::move(d.text)});
  nlohmann::json merged = merge_node_watches(job_id, docs, std::move(answers.unreachable));
  for (const auto& d : answers.diagnostics) merged["diagnostics"].push_back(diagnostic_to_json(d));
  return merged;
}

// The job, or the exit code when it cannot be watched.
Result<SlurmJob> resolve_job(const SlurmOptions& s) {
  return resolve_slurm_job(s, Deadline::after(std::chrono::seconds(30)));
}

int job_error(const Error& e) {
  print_error(e);
  return e.code == Errc::usage ? kExitUsage : kExitNothing;
}

}  // namespace

int run_watch_slurm(const WatchSlurmRequest& r) {
  if (r.stall > 0) return run_watch_slurm_stall(r);
  auto s = node_watch_options(r, r.seconds, {});
  if (!s) return job_error(s.error());
  auto job = resolve_job(*s);
  if (!job) return job_error(job.error());
  StopSignals stop;  // before the thread: it inherits the block, the signals come to us
  fmt::print(stderr,
             "hangscan: watching job {} on {} node{} ({}) for {} s; SIGINT ends every node's "
             "window and reports\n",
             job->id, job->nodes.size(), job->nodes.size() == 1 ? "" : "s", job->nodelist,
             r.seconds);
  std::fflush(stderr);
  bool stopped = false;
  AgentAnswers answers = run_node_watches(*s, *job, stop, {}, stopped);
  nlohmann::json merged = merge_answers(job->id, std::move(answers));
  std::string text = r.json ? merged.dump(2) + "\n" : cluster_watch_text(merged);
  if (!write_stdout(text)) return kExitNothing;
  if (merged["processes"].empty()) return kExitNothing;
  return merged["unreachable"].empty() ? kExitComplete : kExitPartial;
}

namespace {

// The nodes' verdicts: every node reported and is quiet (its ranks made no progress for the
// stall time, or have all ended); the newest progress any node saw (wall clock; none when no
// rank progressed in these windows), and the newest of that or of a window's start.
struct NodesVerdict {
  bool quiet = false;
  bool any_stalled = false;
  std::optional<double> newest_progress_unix_s;
  double quiet_since_unix_s = 0;
};

// From the merged report's node entries: each node's document was read once, by the merge.
NodesVerdict judge_nodes(const nlohmann::json& merged) {
  NodesVerdict v;
  v.quiet = !merged["nodes"].empty() && merged["unreachable"].empty();
  for (const auto& n : merged["nodes"]) {
    const nlohmann::json* st = n.contains("stall") ? &n["stall"] : nullptr;
    bool stalled = st != nullptr && (*st)["reason"].is_string();
    v.any_stalled |= stalled;
    if (!stalled && !n.value("ranks_ended", false)) v.quiet = false;
    double since = n.value("window_start_unix_s", 0.0);
    if (st != nullptr && (*st)["last_progress_unix_s"].is_number()) {
      double t = (*st)["last_progress_unix_s"].get<double>();
      v.newest_progress_unix_s = std::max(v.newest_progress_unix_s.value_or(t), t);
      since = std::max(since, t);
    }
    v.quiet_since_unix_s = std::max(v.quiet_since_unix_s, since);
  }
  return v;
}

double unix_now() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

// The capture of every node (as `hangscan --slurm-job ID --native`) and the nodes' merged
// timeline, into a bundle; returns its path.
Result<std::string> capture_job_bundle(const SlurmOptions& watch, const WatchSlurmRequest& r,
                                       const std::string& reason, const nlohmann::json& merged) {
  SlurmOptions s;
  s.job_id = watch.job_id;
  s.agent_path = watch.agent_path;
  s.context = watch.context;
  auto launcher = make_slurm_launcher(std::move(s));
  auto plan = launcher->plan();
  if (!plan) return plan.error();
  CaptureFlags flags;
  flags.native = true;
  ClusterRun run = run_cluster(*launcher, *plan, capture_flag_args(flags), {});
  OutputOptions output;
  output.logs = r.logs;  // --logs: each rank's last line beside its stack
  auto analysis = analyze_job(run.merged, output);
  if (!analysis) return analysis.error();
  return write_stall_bundle(r.output_dir, reason, run.merged, *analysis,
                            {cluster_watch_text(merged), merged});
}

}  // namespace

int run_watch_slurm_stall(const WatchSlurmRequest& r) {
  // Each node's watch runs until its ranks stall (or the front end ends it), at most 12 hours
  // (then the nodes are started again).
  auto s = node_watch_options(r, 43200, {"--stall", fmt::format("{}", r.stall)});
  if (!s) return job_error(s.error());
  auto job = resolve_job(*s);
  if (!job) return job_error(job.error());
  StopSignals stop;  // before the threads: they inherit the block, the signals come to us
  fmt::print(
      stderr,
      "hangscan: watchdog on job {} ({} node{}: {}): fires when no rank on any node made "
      "progress for {} s{}\n",
      job->id, job->nodes.size(), job->nodes.size() == 1 ? "" : "s", job->nodelist, r.stall,
      r.log_file.empty() ? "" : fmt::format(" or {} was not written for as long", r.log_file));
  std::fflush(stderr);
  double fired_at = -1;   // when the last bundle was written: fires again after progress since
  bool log_armed = true;  // --log fires again only after it was written again
  while (true) {
    std::string log_reason;
    auto log_stale = [&] {
      log_reason = log_stall(r.log_file, r.stall);
      if (log_reason.empty()) log_armed = true;
      return log_armed && !log_reason.empty();
    };
    bool stopped = false;
    AgentAnswers answers = run_node_watches(*s, *job, stop, log_stale, stopped);
    if (stopped) return kExitComplete;
    nlohmann::json merged = merge_answers(job->id, std::move(answers));
    NodesVerdict v = judge_nodes(merged);
    std::string reason = log_armed ? log_reason : std::string();
    bool progressed = fired_at < 0 || v.newest_progress_unix_s.value_or(0) > fired_at;
    if (reason.empty() && v.quiet && v.any_stalled && progressed) {
      reason = fmt::format("no rank on any node made progress for {:.0f} s",
                           unix_now() - v.quiet_since_unix_s);
    }
    if (reason.empty()) {
      if (v.quiet && !v.any_stalled) {  // every rank ended
        fmt::print(stderr, "hangscan: every rank of job {} ended; the watchdog stops\n", job->id);
        return kExitComplete;
      }
      if (merged["nodes"].empty()) {
        for (const auto& u : merged["unreachable"])
          print_error(fmt::format("node {}: {}", u.value("node", "?"), u.value("reason", "?")));
        print_error(fmt::format("no node of job {} reported", job->id),
                    "check the job with 'squeue -j ID'; 'hangscan watch --slurm-job ID --for 5' "
                    "says what each node does");
        return kExitNothing;
      }
      continue;  // a node ended otherwise (srun, its deadline), or no progress since the last
                 // bundle
    }
    if (!log_reason.empty() && reason == log_reason) log_armed = false;
    fired_at = unix_now();
    auto dir = capture_job_bundle(*s, r, reason, merged);
    if (!dir) {
      print_error(dir.error());
      return kExitNothing;
    }
    print_stall(reason, *dir);
    if (r.once) return kExitComplete;
  }
}

}  // namespace hangscan::cli
