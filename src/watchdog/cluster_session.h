// `hangscan watch --slurm-job ID` and `watch --k8s SELECTOR` as library calls: one long-lived
// node-local `watch` per node of the job (srun --overlap; kubectl exec in each pod), their
// documents read and merged (watch/cluster_watch.h), and across the nodes the one Watchdog
// (watchdog.h).
//
// Why in the library: the CLI maps flags to a request and prints what the hooks say; the
// fan-out, the window's end, the judging of the nodes' verdicts and the bundle are the same for
// every front end. Only how the watches reach the nodes differs: a NodeWatchFanout.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fanout/launcher.h"
#include "group/analysis.h"
#include "hangscan/model.h"
#include "hangscan/result.h"
#include "logs/job_analysis.h"
#include "watch/watch_writers.h"

namespace hangscan {

struct ClusterWatchRequest {
  double seconds = 10;
  int rate = 19;
  int wait_ms = 10;
  double stall = 0;        // > 0: the watchdog across the nodes (until stopped)
  std::string log_file;    // --log: also a stall when it was not written for `stall` s
  std::string output_dir;  // where stall bundles go
  bool once = false;
  GroupOptions group;  // how the bundle's capture is grouped
  JobLogs logs;        // --logs: joined with the bundle's capture (each rank's last line)
  // --job-logs: this Slurm job's output files (fanout/slurm_job_logs.h), read as the job's user
  // when a bundle is made and joined beside `logs`; empty: none.
  std::string job_logs_of;
};

struct ClusterWatchHooks {
  int stop_fd = -1;                    // readable when a stop signal arrived (poll)
  std::function<bool()> stop_pending;  // consumes it
  std::function<void(const LaunchPlan&)> started;
  // What stood in the way of request.job_logs_of's files at a bundle, as data to word.
  std::function<void(const std::vector<Error>&)> job_log_problems;
  std::function<void(const std::vector<LogProblem>&)> unread_logs;      // of the bundle's logs
  std::function<void(const std::string&, const std::string&)> stalled;  // reason, bundle dir
};

// How the node-local watches of one job reach its nodes, and how their windows end early.
// Why: the session above is the same for Slurm and Kubernetes; a scheduler is this interface.
class NodeWatchFanout {
 public:
  virtual ~NodeWatchFanout() = default;
  // The job's nodes, resolved once; `job_id` names the job in the merged report. Errors when
  // the job cannot be watched at all (unknown, pending, no pods).
  virtual Result<LaunchPlan> plan() = 0;
  // The launcher whose run_agents() runs `hangscan watch --node-local` with `node_args` on each
  // node, its deadline `window_s` plus the start-up and the report's way back.
  virtual std::unique_ptr<Launcher> watches(double window_s,
                                            const std::vector<std::string>& node_args) const = 0;
  // Ends the window of every watch still running (each still reports); repeated about once a
  // second while they run.
  virtual void end_windows() const = 0;
  // The launcher of the bundle's capture round (`hangscan agent` on every node).
  virtual std::unique_ptr<Launcher> capture() const = 0;
  // The hint when no node reported: how to look at the job.
  virtual std::string check_hint() const = 0;
};

// A node-local watch's deadline for a window of `window_s`: the window, the recorder's start-up
// and the report's way back (the node ends its window 5 s before it).
std::chrono::milliseconds node_watch_timeout(double window_s);

// Slurm: one srun --overlap step of `hangscan watch --node-local --slurm-job ID`; SIGUSR1 to
// srun (which forwards it to its tasks) ends the windows. `agent_path`: hangscan on the nodes.
std::unique_ptr<NodeWatchFanout> make_slurm_node_watches(const std::string& job_id,
                                                         const std::string& agent_path);

// The merged window of every node (merge_node_watches, with the run's diagnostics): `json`
// and its words (cluster_watch_text).
Result<WatchDocument> run_cluster_watch(NodeWatchFanout& fanout, const ClusterWatchRequest& request,
                                        const ClusterWatchHooks& hooks);

// How the watchdog across the nodes ended.
enum class ClusterWatchdogEnd { stopped, once, every_rank_ended };

// Each node's watch runs until its ranks stall (or the front end ends it), at most 12 hours
// (then the nodes are started again). The job is stalled when every node has (or --log went
// stale: the nodes are told to end their window); the bundle is the capture of every node (as
// `hangscan --slurm-job --native`) with the nodes' merged timeline. Then it watches again.
// Error: the job cannot be resolved, no node reported (the nodes' reasons in the message), a
// bundle could not be written.
Result<ClusterWatchdogEnd> run_cluster_watchdog(NodeWatchFanout& fanout,
                                                const ClusterWatchRequest& request,
                                                const ClusterWatchHooks& hooks);

}  // namespace hangscan
