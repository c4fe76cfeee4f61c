// `hangscan watch --slurm-job ID` as a library call: one long-lived node-local `watch` per node
// of the job (srun --overlap, as `hangscan --slurm-job` runs its agents), their documents read
// and merged (watch/cluster_watch.h), and across the nodes the one Watchdog (watchdog.h).
//
// Why in the library: the CLI maps flags to a request and prints what the hooks say; the
// fan-out, the window's end (SIGUSR1 to srun, which forwards it to its tasks), the judging of
// the nodes' verdicts and the bundle are the same for every front end.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "fanout/slurm.h"
#include "group/analysis.h"
#include "hangscan/model.h"
#include "hangscan/result.h"
#include "watch/watch_writers.h"

namespace hangscan {

struct ClusterWatchRequest {
  std::string job_id;
  std::string agent_path;  // hangscan on the nodes (absolute)
  double seconds = 10;
  int rate = 19;
  int wait_ms = 10;
  double stall = 0;        // > 0: the watchdog across the nodes (until stopped)
  std::string log_file;    // --log: also a stall when it was not written for `stall` s
  std::string output_dir;  // where stall bundles go
  bool once = false;
  GroupOptions group;  // how the bundle's capture is grouped
};

struct ClusterWatchHooks {
  int stop_fd = -1;                    // readable when a stop signal arrived (poll)
  std::function<bool()> stop_pending;  // consumes it
  std::function<void(const SlurmJob&)> started;
  std::function<void(const JobSnapshot&, Analysis&)> annotate_bundle;   // --logs
  std::function<void(const std::string&, const std::string&)> stalled;  // reason, bundle dir
};

// The merged window of every node (merge_node_watches, with the run's diagnostics): `json`
// and its words (cluster_watch_text).
Result<WatchDocument> run_cluster_watch(const ClusterWatchRequest& request,
                                        const ClusterWatchHooks& hooks);

// How the watchdog across the nodes ended.
enum class ClusterWatchdogEnd { stopped, once, every_rank_ended };

// Each node's watch runs until its ranks stall (or the front end ends it), at most 12 hours
// (then the nodes are started again). The job is stalled when every node has (or --log went
// stale: the nodes are told to end their window); the bundle is the capture of every node (as
// `hangscan --slurm-job --native`) with the nodes' merged timeline. Then it watches again.
// Error: the job cannot be resolved, no node reported (the nodes' reasons in the message), a
// bundle could not be written.
Result<ClusterWatchdogEnd> run_cluster_watchdog(const ClusterWatchRequest& request,
                                                const ClusterWatchHooks& hooks);

}  // namespace hangscan
