#include "watchdog/cluster_session.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <optional>
#include <thread>
#include <vector>

#include "fanout/launcher.h"
#include "fanout/slurm.h"
#include "fanout/slurm_job_logs.h"
#include "jobs/capture_flags.h"
#include "proc/process_tree.h"
#include "report/json_writer.h"
#include "watch/cluster_watch.h"
#include "watchdog/watchdog.h"

namespace hangscan {

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

// The node-local watches' srun step for `job_id` (`node_args`: the node-local arguments); the
// node ends its window 5 s before its own deadline (agent_timeout_for keeps a margin below ours).
SlurmOptions node_watch_options(const std::string& job_id, const std::string& agent_path,
                                double window_s, const std::vector<std::string>& node_args) {
  SlurmOptions s;
  s.job_id = job_id;
  s.agent_path = agent_path;
  s.agent_subcommand = "watch";
  s.agent_args = node_args;
  // The window, the recorder's start-up and the report's way back.
  s.timeout = node_watch_timeout(window_s);
  s.context = slurm_context_from_environment();
  s.max_rounds = 1;  // a node started later would watch another window: it is reported instead
  return s;
}

class SlurmNodeWatches : public NodeWatchFanout {
 public:
  SlurmNodeWatches(std::string job_id, std::string agent_path)
      : job_id_(std::move(job_id)), agent_path_(std::move(agent_path)) {}

  Result<LaunchPlan> plan() override {
    SlurmOptions s = node_watch_options(job_id_, agent_path_, 0, {});
    auto job = resolve_slurm_job(s, Deadline::after(std::chrono::seconds(30)));
    if (!job) return std::move(job).error();
    LaunchPlan plan;
    plan.job_id = job->id;
    plan.nodes = job->nodes;
    plan.description = job->nodelist;
    return plan;
  }

  std::unique_ptr<Launcher> watches(double window_s,
                                    const std::vector<std::string>& node_args) const override {
    return make_slurm_launcher(node_watch_options(job_id_, agent_path_, window_s, node_args));
  }

  // srun forwards SIGUSR1 to its tasks (SIGINT would only print their status, SIGTERM cancels
  // the step and its output); each node-local watch ends its window on it.
  void end_windows() const override {
    for (int pid : children_named("srun")) ::kill(pid, SIGUSR1);
  }

  std::unique_ptr<Launcher> capture() const override {
    SlurmOptions s;
    s.job_id = job_id_;
    s.agent_path = agent_path_;
    s.context = slurm_context_from_environment();
    return make_slurm_launcher(std::move(s));
  }

  std::string check_hint() const override {
    return "check the job with 'squeue -j ID'; 'hangscan watch --slurm-job ID --for 5' says "
           "what each node does";
  }

 private:
  std::string job_id_;
  std::string agent_path_;
};

// The node-local arguments of every watch of `r` (`extra`: more of them).
std::vector<std::string> node_watch_args(const ClusterWatchRequest& r, double window_s,
                                         std::vector<std::string> extra) {
  std::vector<std::string> args{
      "--node-local",         "--for",     fmt::format("{}", window_s), "--rate",
      std::to_string(r.rate), "--wait-ms", std::to_string(r.wait_ms)};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Runs the node-local watches until every node reported. A stop (`stopped` set) or `end_now()`
// turning true ends every node's window (the fan-out's end_windows); each node-local watch
// still sends its report. The round goes through the Launcher interface, as every fan-out
// round does.
AgentAnswers run_node_watches(const NodeWatchFanout& f, const LaunchPlan& plan, double window_s,
                              const std::vector<std::string>& node_args,
                              const ClusterWatchHooks& hooks, const std::function<bool()>& end_now,
                              bool& stopped) {
  std::atomic<bool> done{false};
  AgentAnswers answers;
  const auto launcher = f.watches(window_s, node_args);
  std::thread fanout([&] {
    answers = launcher->run_agents(plan.nodes, node_args, {});
    done = true;
  });
  bool stopping = false;
  std::optional<std::chrono::steady_clock::time_point> last_told;
  while (!done) {
    pollfd p{hooks.stop_fd, POLLIN, 0};
    ::poll(&p, 1, 200);
    if (hooks.stop_pending && hooks.stop_pending()) stopped = stopping = true;
    if (!stopping && end_now && end_now()) stopping = true;
    if (!stopping) continue;
    // Every second until the round ends: srun drops a signal that comes before its tasks run
    // (a stale --log is seen at once), and the node-local watches ignore it once their window
    // ended.
    auto now = std::chrono::steady_clock::now();
    if (last_told && now - *last_told < std::chrono::seconds(1)) continue;
    last_told = now;
    f.end_windows();
  }
  fanout.join();
  return answers;
}

// The nodes' documents read (each once) and merged, with the run's own diagnostics.
WatchDocument merge_answers(const std::string& job_id, AgentAnswers answers) {
  std::vector<NodeWatchDocument> docs;
  for (auto& d : answers.documents) docs.push_back({d.node, std::move(d.text)});
  nlohmann::json merged = merge_node_watches(job_id, docs, std::move(answers.unreachable));
  for (const auto& d : answers.diagnostics) merged["diagnostics"].push_back(diagnostic_to_json(d));
  std::string text = cluster_watch_text(merged);
  return {std::move(merged), std::move(text)};
}

// The nodes' verdicts, from the merged report's node entries: every node reported and is
// quiet (its ranks made no progress for the stall time, or have all ended); the newest
// progress any node saw (wall clock; none when no rank progressed in these windows), and the
// newest of that or of a window's start.
struct NodesVerdict {
  bool quiet = false;
  bool any_stalled = false;
  std::optional<double> newest_progress_unix_s;
  double quiet_since_unix_s = 0;
};

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
Result<std::string> capture_job_bundle(const NodeWatchFanout& f, const ClusterWatchRequest& r,
                                       const ClusterWatchHooks& hooks, const std::string& reason,
                                       const WatchDocument& merged) {
  auto launcher = f.capture();
  auto plan = launcher->plan();
  if (!plan) return plan.error();
  CaptureFlags flags;
  flags.native = true;
  ClusterRun run = run_cluster(*launcher, *plan, capture_flag_args(flags), {});
  Analysis analysis = analyze(run.merged, r.group);
  JobLogs logs = r.logs;
  if (!r.job_logs_of.empty()) {
    JobOutputLogs found = slurm_job_output_logs(r.job_logs_of);
    if (!found.problems.empty() && hooks.job_log_problems) hooks.job_log_problems(found.problems);
    for (auto& text : found.logs) logs.texts.push_back(std::move(text));
  }
  auto unread = join_job_logs(run.merged, analysis, logs);
  if (!unread.empty() && hooks.unread_logs) hooks.unread_logs(unread);
  return write_stall_bundle(r.output_dir, reason, run.merged, analysis, merged);
}

// Why no node's document could be used: each node's reason, then the fix.
Error no_node_reported(const NodeWatchFanout& f, const std::string& job_id,
                       const nlohmann::json& merged) {
  std::string why;
  for (const auto& u : merged["unreachable"])
    why += fmt::format("; node {}: {}", u.value("node", "?"), u.value("reason", "?"));
  return Error(Errc::not_found, fmt::format("no node of job {} reported{}", job_id, why), 0,
               f.check_hint());
}

}  // namespace

std::chrono::milliseconds node_watch_timeout(double window_s) {
  return std::chrono::milliseconds(static_cast<long long>(window_s * 1000) + 30000);
}

std::unique_ptr<NodeWatchFanout> make_slurm_node_watches(const std::string& job_id,
                                                         const std::string& agent_path) {
  return std::make_unique<SlurmNodeWatches>(job_id, agent_path);
}

Result<WatchDocument> run_cluster_watch(NodeWatchFanout& f, const ClusterWatchRequest& r,
                                        const ClusterWatchHooks& hooks) {
  auto plan = f.plan();
  if (!plan) return std::move(plan).error();
  if (hooks.started) hooks.started(*plan);
  bool stopped = false;
  AgentAnswers answers =
      run_node_watches(f, *plan, r.seconds, node_watch_args(r, r.seconds, {}), hooks, {}, stopped);
  return merge_answers(plan->job_id, std::move(answers));
}

Result<ClusterWatchdogEnd> run_cluster_watchdog(NodeWatchFanout& f, const ClusterWatchRequest& r,
                                                const ClusterWatchHooks& hooks) {
  auto plan = f.plan();
  if (!plan) return std::move(plan).error();
  if (hooks.started) hooks.started(*plan);
  const std::vector<std::string> node_args =
      node_watch_args(r, 43200, {"--stall", fmt::format("{}", r.stall)});
  Watchdog dog(r.stall, r.log_file, "rank on any node");
  while (true) {
    bool stopped = false;
    AgentAnswers answers = run_node_watches(
        f, *plan, 43200, node_args, hooks, [&] { return !dog.log_reason().empty(); }, stopped);
    if (stopped) return ClusterWatchdogEnd::stopped;
    WatchDocument merged = merge_answers(plan->job_id, std::move(answers));
    const NodesVerdict v = judge_nodes(merged.json);
    const double now = unix_now();
    ProgressView seen{v.quiet && v.any_stalled, now - v.quiet_since_unix_s,
                      v.newest_progress_unix_s};
    std::string reason = dog.judge(seen, now);
    if (reason.empty()) {
      if (v.quiet && !v.any_stalled) return ClusterWatchdogEnd::every_rank_ended;
      if (merged.json["nodes"].empty()) return no_node_reported(f, plan->job_id, merged.json);
      continue;  // a node ended otherwise (its launcher, its deadline), or no progress since the
                 // last bundle
    }
    auto dir = capture_job_bundle(f, r, hooks, reason, merged);
    if (!dir) return std::move(dir).error();
    if (hooks.stalled) hooks.stalled(reason, *dir);
    if (r.once) return ClusterWatchdogEnd::once;
  }
}

}  // namespace hangscan
