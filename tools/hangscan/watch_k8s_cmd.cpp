// `hangscan watch --k8s SELECTOR`: the flags mapped to the k8s node watches
// (watchdog/k8s_watches.h) and what they say, printed by the cluster watch's printer
// (watch_slurm.h).
#include <fmt/core.h>
#include <boost/process/search_path.hpp>

#include <cstdio>
#include <optional>

#include "cli.h"
#include "fanout_cli.h"
#include "output.h"
#include "util/escape.h"
#include "watch_slurm.h"
#include "watchdog/k8s_watches.h"

namespace hangscan::cli {

namespace {

// The k8s launcher's options of `target`; nullopt (said on stderr) when they cannot be used.
std::optional<K8sOptions> k8s_options(const WatchK8sTarget& target) {
  if (boost::process::search_path("kubectl").empty()) {
    print_error("'kubectl' is not installed here (not found on PATH)",
                "run hangscan where kubectl reaches the cluster (kubectl get pods works)");
    return std::nullopt;
  }
  if (target.agent_path.empty()) {
    // The watches run inside the pods: hangscan's path there, not this binary's.
    print_error("watch --k8s needs --agent-path: where hangscan is inside the pods",
                "put the tarball of 'make dist' into the image or a shared volume and pass "
                "e.g. --agent-path /opt/hangscan/bin/hangscan (docs/kubernetes.md)");
    return std::nullopt;
  }
  auto agent = resolve_agent_path(target.agent_path);
  if (!agent) {
    print_error(agent.error());
    return std::nullopt;
  }
  return K8sOptions{.selector = target.selector,
                    .name_space = target.name_space,
                    .container = target.container,
                    .match = target.match,
                    .agent_path = *agent,
                    .debug_image = target.debug_image,
                    .node_agent = target.node_agent,
                    .node_agent_namespace = target.node_agent_namespace};
}

}  // namespace

int end_node_windows(const std::string& node) {
  return signal_node_watches(node) > 0 ? kExitComplete : kExitPartial;
}

int run_watch_k8s(const WatchK8sTarget& target, ClusterWatchRequest r,
                  const WatchSlurmOutput& out) {
  if (target.match.empty()) {
    print_error("watch --k8s needs --match REGEX: the ranks' command line in every pod",
                "e.g. hangscan watch --k8s job-name=train-42 --match train.py --agent-path PATH");
    return kExitUsage;
  }
  if (!target.node_agent.empty() && !target.debug_image.empty()) {
    print_error("--node-agent and --debug-image both say where the watches run",
                "--node-agent SELECTOR when a hostPID DaemonSet runs hangscan on every node, "
                "else --debug-image IMAGE");
    return kExitUsage;
  }
  auto k = k8s_options(target);
  if (!k) return target.agent_path.empty() ? kExitUsage : kExitNothing;
  auto fanout = make_k8s_node_watches(std::move(*k));
  ClusterWatchHooks hooks;
  hooks.started = [&r, node_agent = !target.node_agent.empty()](const LaunchPlan& plan) {
    if (r.stall > 0) {
      fmt::print(stderr,
                 "hangscan: watchdog on {}: fires when no rank in any pod made progress for {} "
                 "s{}\n",
                 escape_for_text(plan.description), r.stall,
                 r.log_file.empty() ? ""
                                    : fmt::format(" or {} was not written for as long",
                                                  escape_for_text(r.log_file)));
    } else {
      fmt::print(stderr,
                 "hangscan: watching {} for {} s ({}); SIGINT ends every pod's window and "
                 "reports\n",
                 escape_for_text(plan.description), r.seconds,
                 node_agent ? "from the node agents" : "ptrace samples in each pod");
    }
    std::fflush(stderr);
  };
  WatchSlurmOutput named = out;
  named.job_name = "the pods of '" + target.selector + "'";
  return run_watch_nodes(*fanout, std::move(r), named, std::move(hooks));
}

}  // namespace hangscan::cli
