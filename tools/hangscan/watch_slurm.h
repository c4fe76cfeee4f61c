// `hangscan watch --slurm-job ID` and `watch --k8s SELECTOR`: the recorder on every node (pod)
// of a job, merged.
//
// Why its own file: the front end's flags map to a ClusterWatchRequest (watchdog/
// cluster_session.h, where the fan-out and the watchdog live); these files print what it says.
#pragma once

#include <string>
#include <vector>

#include "watchdog/cluster_session.h"

namespace hangscan::cli {

struct WatchSlurmOutput {
  std::string format = "text";    // --format / --json: the merged report on stdout
  std::string html_file;          // --html FILE: the page too
  std::vector<std::string> logs;  // --logs: joined with the bundle's capture
  bool job_logs = false;  // --job-logs: the job's StdOut/StdErr too (fanout/slurm_job_logs.h)
  std::string job_name;   // "job ID", "pods of SELECTOR": for what is said on stderr
};

// The window (with `request.stall`, the watchdog) across the nodes of `fanout`, printed; the
// front end's `hooks` say what it watches and annotate the bundle. Returns the exit code.
int run_watch_nodes(NodeWatchFanout& fanout, ClusterWatchRequest request,
                    const WatchSlurmOutput& output, ClusterWatchHooks hooks);

// The window across the nodes, merged; with `request.stall`, the watchdog. Returns the exit
// code.
int run_watch_slurm(const std::string& job_id, ClusterWatchRequest request,
                    const WatchSlurmOutput& output);

// Which pods `watch --k8s` watches, and what runs there (as `hangscan k8s` takes them).
struct WatchK8sTarget {
  std::string selector;     // --k8s: the pods' label selector
  std::string name_space;   // -n
  std::string container;    // --container; "" = the pod's default container
  std::string match;        // --match: the ranks in each pod
  std::string agent_path;   // --agent-path: hangscan inside the pods (or in --debug-image)
  std::string debug_image;  // --debug-image: the watch in an ephemeral container of IMAGE
  std::string node_agent;   // --node-agent: the watch in the hostPID DaemonSet pod of the node
  std::string node_agent_namespace;  // --node-agent-namespace
};

// The window (or the watchdog) across the pods of `target` (watchdog/k8s_watches.h). Returns
// the exit code.
int run_watch_k8s(const WatchK8sTarget& target, ClusterWatchRequest request,
                  const WatchSlurmOutput& output);

// `watch --end-window --node POD`, run in a pod through kubectl exec by the front end of
// `watch --k8s`: SIGUSR1 to the node-local watches of POD running this hangscan (as srun
// forwards it on a Slurm node); each ends its window and still reports. 0 when one was told.
int end_node_windows(const std::string& node);

}  // namespace hangscan::cli
