// `hangscan watch --k8s SELECTOR`: the node-local watches in every pod of a Kubernetes job.
//
// Why: a pod is a node of the merged watch as a Slurm node is (cluster_session.h); only how the
// watches get there differs: `kubectl exec` (or the ephemeral container of --debug-image) runs
// `hangscan watch --node-local --match REGEX --node POD --ptrace` in each, through the k8s
// Launcher (fanout/k8s.h). The ptrace sampler, because a pod has a pid namespace of its own
// and the eBPF recorder keys on the host's pids, which the pod does not see; with a node agent
// (a hostPID DaemonSet, K8sOptions::node_agent) the watch runs there by host pid, eBPF where
// it may load.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "fanout/k8s.h"
#include "watchdog/cluster_session.h"

namespace hangscan {

// `options`: the pods, the container, --match and where hangscan is in the pods, as for
// `hangscan k8s`; its timeout is the bundle capture's (each window has its own deadline).
std::unique_ptr<NodeWatchFanout> make_k8s_node_watches(K8sOptions options);

// `watch --end-window --node POD`, run in a pod by the front end (as srun forwards SIGUSR1 on a
// Slurm node): SIGUSR1 to each node-local watch of `node` running this same binary with its
// stop signals already blocked (one told sooner would end without its report; the front end
// asks again a second later). Each is signalled through a pidfd opened before its /proc files
// are read, so a pid reused meanwhile is never told. Returns how many were told.
std::size_t signal_node_watches(const std::string& node);

}  // namespace hangscan
