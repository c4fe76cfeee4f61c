// `hangscan k8s SELECTOR --match REGEX`: the agent in every pod of a Kubernetes job, merged.
#include <fmt/core.h>
#include <boost/process/search_path.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "fanout/k8s.h"
#include "fanout/k8s_logs.h"
#include "fanout_cli.h"
#include "gcore_cmd.h"
#include "util/escape.h"

namespace hangscan::cli {

namespace {

struct K8sCliOptions {
  std::string selector;
  std::string name_space;
  std::string container;
  std::string match;
  std::string copy_agent;   // a make dist tree to copy into each pod
  std::string debug_image;  // --debug-image: the agent in an ephemeral container of this image
  std::string node_agent;   // --node-agent: the agent in the hostPID DaemonSet pod of each node
  std::string node_agent_namespace;
  std::string pod_logs;  // --pod-logs [CONTAINER]: kubectl logs of each pod
  CLI::Option* pod_logs_option = nullptr;
  std::vector<std::string> pod_log_files;  // --pod-log-file PATH: files inside the pods
  int parallel = 32;
  FanoutCliOptions common;
  GcoreDumpOptions gcore;
};

// --copy-agent: the make dist tree to copy into each pod and the agent's path there; false
// (said on stderr) when it cannot be used.
bool plan_agent_copy(const K8sCliOptions& o, K8sOptions& k) {
  if (!o.common.agent_path.empty()) {
    print_error("--copy-agent and --agent-path both say where the agent is",
                "pass --agent-path when the image has hangscan, else --copy-agent");
    return false;
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(o.copy_agent + "/bin/hangscan", ec) ||
      !std::filesystem::is_regular_file(o.copy_agent + "/libexec/hangscan", ec)) {
    print_error(fmt::format("--copy-agent {}: not an unpacked tarball of make dist (no "
                            "bin/hangscan and libexec/hangscan in it)",
                            escape_for_text(o.copy_agent)),
                "unpack hangscan-VERSION-x86_64-linux.tar.gz and pass its hangscan-VERSION "
                "directory");
    return false;
  }
  k.copy_dir = o.copy_agent;
  k.copy_dest = fmt::format("/tmp/hangscan-agent-{}", ::getpid());
  k.agent_path = k.copy_dest + "/bin/hangscan";
  return true;
}

// The combinations k8s refuses before it asks kubectl anything; false (said on stderr) for one.
bool k8s_options_valid(const K8sCliOptions& o) {
  if (!o.debug_image.empty() && !o.copy_agent.empty()) {
    print_error("--debug-image and --copy-agent both say how the agent gets into the pods",
                "--debug-image IMAGE when an image holds hangscan, else --copy-agent DIR");
    return false;
  }
  if (!o.node_agent.empty() && (!o.debug_image.empty() || !o.copy_agent.empty())) {
    print_error(
        "--node-agent with --debug-image or --copy-agent: the node agent's pod holds "
        "hangscan (--agent-path there)",
        "pass --node-agent SELECTOR --agent-path PATH-IN-THE-AGENT-POD");
    return false;
  }
  if (!o.debug_image.empty() && o.gcore.requested()) {
    print_error(
        "--gcore with --debug-image: a core written in an ephemeral container is lost "
        "when the container ends",
        "write cores with --agent-path (hangscan in the pod's image or a volume) or "
        "--copy-agent");
    return false;
  }
  for (const auto& path : o.pod_log_files) {
    if (path.empty() || path.front() != '/') {
      print_error(fmt::format("--pod-log-file {}: not an absolute path inside the pods",
                              escape_for_text(path)),
                  "name the file as the pod's container sees it, e.g. --pod-log-file "
                  "/logs/train.log");
      return false;
    }
  }
  if (o.gcore.requested() && o.gcore.dir.front() != '/') {
    print_error(fmt::format("--gcore-dir {}: the cores are written inside the pods, where this "
                            "directory means nothing",
                            escape_for_text(o.gcore.dir)),
                "give an absolute path inside the pods, e.g. --gcore-dir /tmp (the default)");
    return false;
  }
  return true;
}

// Where the agent is in the pods (--agent-path, or the --copy-agent copy); false (said on
// stderr) when that is not known.
bool place_agent(const K8sCliOptions& o, K8sOptions& k) {
  if (!o.copy_agent.empty()) return plan_agent_copy(o, k);
  if (o.common.agent_path.empty()) {
    // The agent runs inside the pods: its path there, not this binary's (which may not exist).
    print_error("k8s needs --agent-path: where hangscan is inside the pods",
                "put the tarball of 'make dist' into the image or a shared volume and pass "
                "e.g. --agent-path /opt/hangscan/bin/hangscan (docs/kubernetes.md)");
    return false;
  }
  auto agent = resolve_agent_path(o.common.agent_path);
  if (agent) k.agent_path = *agent;
  else print_error(agent.error());
  return agent.ok();
}

// --pod-logs and --pod-log-file: the pods' logs fetched after the capture, with its deadline.
void add_pod_logs(const K8sCliOptions& o, const K8sOptions& k, FanoutCliOptions& common) {
  bool container_log = o.pod_logs_option != nullptr && o.pod_logs_option->count() > 0;
  if (!container_log && o.pod_log_files.empty()) return;
  PodLogOptions logs;
  logs.name_space = o.name_space;
  logs.container = o.pod_logs;
  logs.container_log = container_log;
  logs.selector = o.selector;
  logs.files = o.pod_log_files;
  logs.parallel = k.parallel;
  logs.timeout = k.timeout;
  common.pod_logs = std::move(logs);
}

int run_k8s(const K8sCliOptions& o) {
  if (!cluster_options_valid(o.common, o.gcore, &o.match) || !k8s_options_valid(o))
    return kExitUsage;
  K8sOptions k;
  if (boost::process::search_path(k.kubectl).empty()) {
    print_error("'kubectl' is not installed here (not found on PATH)",
                "run hangscan where kubectl reaches the cluster (kubectl get pods works)");
    return kExitNothing;
  }
  if (!place_agent(o, k)) return kExitUsage;
  k.selector = o.selector;
  k.name_space = o.name_space;
  k.container = o.container;
  k.match = o.match;
  k.parallel = static_cast<std::size_t>(o.parallel);
  k.debug_image = o.debug_image;
  k.node_agent = o.node_agent;
  k.node_agent_namespace = o.node_agent_namespace;
  k.timeout = std::chrono::milliseconds(static_cast<long long>(o.common.timeout_s * 1000));
  FanoutCliOptions common = o.common;
  common.check_node = "'kubectl describe pod NAME'";
  add_pod_logs(o, k, common);
  return run_cluster_mode(*make_k8s_launcher(std::move(k)), common, o.gcore);
}

}  // namespace

void add_k8s_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<K8sCliOptions>();
  auto* sub = app.add_subcommand(
      "k8s", "Capture matching processes in every pod of a Kubernetes job through kubectl, merged");
  sub->add_option("selector", opts->selector,
                  "Label selector of the job's pods, e.g. job-name=train-42")
      ->required();
  sub->add_option("-n,--namespace", opts->name_space, "Namespace (default: kubectl's current one)");
  sub->add_option("-c,--container", opts->container,
                  "Container to run the agent in (default: the pod's default container)");
  sub->add_option("--match", opts->match,
                  "Processes whose command line matches REGEX, in every pod")
      ->required();
  sub->add_option("--copy-agent", opts->copy_agent,
                  "The image has no hangscan: copy this unpacked make dist tree into each pod "
                  "(kubectl cp, needs tar there), run it, remove it");
  sub->add_option("--debug-image", opts->debug_image,
                  "Run the agent (--agent-path: its path in IMAGE) in an ephemeral container of "
                  "IMAGE beside the target container: kubectl debug --target --profile=general");
  sub->add_option("--node-agent", opts->node_agent,
                  "Run the agent in the pods of this hostPID DaemonSet (label selector), the one "
                  "on each pod's node, for the pod's processes by host pid (docs/kubernetes.md)");
  sub->add_option("--node-agent-namespace", opts->node_agent_namespace,
                  "Namespace of the --node-agent pods (default: kubectl's current one)");
  opts->pod_logs_option =
      sub->add_option("--pod-logs", opts->pod_logs,
                      "Also read each pod's log (kubectl logs [-c CONTAINER]): its rank's last "
                      "line beside its stack (docs/logs.md)")
          ->expected(0, 1);
  sub->add_option("--pod-log-file", opts->pod_log_files,
                  "Also read this file inside each pod (kubectl exec [-c CONTAINER of "
                  "--pod-logs] -- tail, as the container's user): beside the stacks like --logs");
  sub->add_option("-f", opts->parallel, "kubectl calls (exec, debug, logs) at once")
      ->check(whole_number("a pod count", 1, 1024))
      ->capture_default_str();
  add_fanout_options(sub, opts->common);
  add_output_options(sub, opts->common.output);
  opts->gcore.dir = "/tmp";  // --gcore-dir is a directory inside the pods
  add_gcore_dump_options(sub, opts->gcore);
  sub->callback([opts, &action] {
    opts->common.output.color = output_wants_color();
    action = [opts] { return run_k8s(*opts); };
  });
}

}  // namespace hangscan::cli
