// `hangscan k8s SELECTOR`: the agent in every pod of a Kubernetes job, through kubectl.
//
// Why: ML training outside HPC runs as pods (PyTorchJob, JobSet/Indexed Job, Volcano), where
// there is no srun or pdsh but there is kubectl. kubectl already knows the cluster, the user's
// credentials and namespaces; hangscan asks it for the job's pods (`kubectl get pods -o json
// -l SELECTOR`) and runs `hangscan agent` in each with `kubectl exec`, all pods in parallel
// under one deadline, one pod being one "node" of the merged report. Every kubectl call is an
// argv (never a shell line); pod and container names are checked before they are used.
// The JSON fields read (kubectl's `get pods -o json`, a core/v1 PodList): items[].metadata.name,
// .metadata.namespace, .metadata.labels (rank index labels, for the order only: process ranks
// come from each process's own environment), .metadata.annotations
// ["kubectl.kubernetes.io/default-container"], .metadata.deletionTimestamp, .status.phase,
// .status.containerStatuses[].name and .restartCount, and .spec.containers[].name; with a node
// agent (--node-agent) also .metadata.uid and .spec.nodeName.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fanout/collector.h"
#include "fanout/launcher.h"
#include "hangscan/result.h"

namespace hangscan {

struct K8sOptions {
  std::string selector;                    // label selector, e.g. job-name=train-42
  std::string name_space;                  // -n; "" = kubectl's current namespace
  std::string container;                   // -c; "" = the pod's default container
  std::string match;                       // --match REGEX for the agent
  std::string agent_path;                  // hangscan inside the pods
  std::string agent_subcommand = "agent";  // `watch` runs its node-local recorder instead
  // When set, the image has no hangscan: this local `make dist` tree (hangscan-VERSION/) is
  // copied to `copy_dest` in each pod first (kubectl cp: needs tar in the image), agent_path is
  // inside it, and it is removed again after the agent (kubectl exec rm -rf).
  std::string copy_dir;
  std::string copy_dest;
  // When set, the agent runs in an ephemeral container of this image (which holds hangscan at
  // agent_path) beside `container`: `kubectl debug POD --image=IMG --target=CONTAINER
  // --profile=general --attach --quiet -- AGENT ...` (the image of the pod need hold nothing).
  std::string debug_image;
  // The ephemeral container's name (kubectl debug --container), new for every round ("": the
  // round picks one); when kubectl's attach came too late for the agent's output, its log holds
  // it (kubectl logs -c); `watch --end-window` reaches the watch there (kubectl exec -c).
  std::string debug_container;
  // When set, the agents run in the pods of a node DaemonSet with hostPID (this label selector,
  // in `node_agent_namespace`, "" = kubectl's current one), one per node: each job pod's agent
  // runs in the agent pod on the pod's node (spec.nodeName) and picks the job pod's processes
  // by its UID in their cgroups (`agent --pod-uid`), by host pid, so eBPF works there.
  std::string node_agent;
  std::string node_agent_namespace;
  std::vector<std::string> agent_args;  // capture options forwarded to the agent
  std::chrono::milliseconds timeout{30000};
  std::size_t parallel = 32;  // kubectl exec processes at once
  std::string kubectl = "kubectl";
  AnswerWatch watch;
};

// One pod of the job as `kubectl get pods -o json` describes it.
struct K8sPod {
  std::string name;
  std::string name_space;
  std::string container;      // the one the agent runs in
  std::string phase;          // Running, Pending, Succeeded, Failed, Unknown
  bool terminating = false;   // metadata.deletionTimestamp is set
  std::optional<long> index;  // replica / completion / task index label, when present
  long restarts = 0;          // status.containerStatuses[container].restartCount
  std::string uid;            // metadata.uid ("" when it is not a UID)
  std::string node_name;      // spec.nodeName ("" when not scheduled yet)
  // With a node agent: the agent pod on node_name that runs this pod's agent ("" when none).
  std::string agent_pod;
  std::string agent_namespace;
  std::string agent_container;
};

// The pods of a PodList document, ordered by index label then name. `container` (may be "")
// picks the container; otherwise the default-container annotation, else the first one.
// Errc::parse when the document is not a PodList; pods with invalid names are left out.
Result<std::vector<K8sPod>> parse_pod_list(std::string_view json, const std::string& container);

// Gives each pod the node agent on its node (agent_pod, ...): `agents` are the agent pods
// (a DaemonSet's, one per node); only Running ones that are not terminating are taken.
void assign_node_agents(std::vector<K8sPod>& pods, const std::vector<K8sPod>& agents);

// The kubectl argv that runs the agent in `pod`: `kubectl exec`, `kubectl debug` with
// debug_image set, or `kubectl exec` into the pod's node agent with node_agent set.
std::vector<std::string> k8s_exec_argv(const K8sOptions& options, const K8sPod& pod,
                                       std::chrono::milliseconds agent_timeout);

// The kubectl argv that prints the debug container's log (the agent's output when the attach
// missed it).
std::vector<std::string> k8s_debug_log_argv(const K8sOptions& options, const K8sPod& pod);

// The kubectl argvs that copy the dist tree into `pod` and remove it again (copy_dir set).
std::vector<std::string> k8s_copy_argv(const K8sOptions& options, const K8sPod& pod);
std::vector<std::string> k8s_remove_argv(const K8sOptions& options, const K8sPod& pod);

// The kubectl argv that ends the window of the node-local `watch` running for `pod` (through
// `watch --end-window`: SIGUSR1 to it, as srun forwards it on a Slurm node), in the pod's
// container, its debug container (debug_image) or its node agent (node_agent).
std::vector<std::string> k8s_end_watch_argv(const K8sOptions& options, const K8sPod& pod);

// The pods of the selector (kubectl get pods -o json -l SELECTOR), parsed, each with its node
// agent when node_agent is set (a second get pods). Errors: kubectl failed (its last line), not
// a pod list, no pod matches (Errc::usage), no node agent pod matches (Errc::usage).
Result<std::vector<K8sPod>> list_k8s_pods(const K8sOptions& options);

// A new name for a round's ephemeral containers (hangscan-XXXXXXXX): ephemeral containers stay
// in the pod, so each round needs a name of its own.
std::string k8s_debug_container_name();

// The plan of a round on `pods`: their names as the nodes, "N pods of 'SELECTOR'".
LaunchPlan k8s_launch_plan(const std::vector<K8sPod>& pods, const std::string& selector);

// The Launcher of `k8s`: plan() lists the pods (the nodes are pod names), run_agents() execs
// the agent in the running ones; the others are unreachable with their phase as the reason.
std::unique_ptr<Launcher> make_k8s_launcher(K8sOptions options);

}  // namespace hangscan
