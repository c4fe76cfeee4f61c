// `hangscan k8s SELECTOR --match REGEX`: the agent in every pod of a Kubernetes job, merged.
#include <fmt/core.h>
#include <boost/process/search_path.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "cli.h"
#include "fanout/k8s.h"
#include "fanout_cli.h"
#include "gcore_cmd.h"

namespace hangscan::cli {

namespace {

struct K8sCliOptions {
  std::string selector;
  std::string name_space;
  std::string container;
  std::string match;
  int parallel = 32;
  FanoutCliOptions common;
  GcoreDumpOptions gcore;
};

int run_k8s(const K8sCliOptions& o) {
  if (!cluster_options_valid(o.common, o.gcore, &o.match)) return kExitUsage;
  K8sOptions k;
  if (boost::process::search_path(k.kubectl).empty()) {
    print_error("'kubectl' is not installed here (not found on PATH)",
                "run hangscan where kubectl reaches the cluster (kubectl get pods works)");
    return kExitNothing;
  }
  // The agent runs inside the pods: its path there, not this binary's (which may not exist).
  if (o.common.agent_path.empty()) {
    print_error("k8s needs --agent-path: where hangscan is inside the pods",
                "put the tarball of 'make dist' into the image or a shared volume and pass "
                "e.g. --agent-path /opt/hangscan/bin/hangscan (docs/kubernetes.md)");
    return kExitUsage;
  }
  auto agent = resolve_agent_path(o.common.agent_path);
  if (!agent) {
    print_error(agent.error());
    return kExitUsage;
  }
  k.selector = o.selector;
  k.name_space = o.name_space;
  k.container = o.container;
  k.match = o.match;
  k.parallel = static_cast<std::size_t>(o.parallel);
  k.agent_path = *agent;
  k.timeout = std::chrono::milliseconds(static_cast<long long>(o.common.timeout_s * 1000));
  return run_cluster_mode(*make_k8s_launcher(std::move(k)), o.common, o.gcore);
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
  sub->add_option("-f", opts->parallel, "Pods kubectl exec runs in at once")
      ->check(whole_number("a pod count", 1, 1024))
      ->capture_default_str();
  add_fanout_options(sub, opts->common);
  add_output_options(sub, opts->common.output);
  add_gcore_dump_options(sub, opts->gcore);
  sub->callback([opts, &action] {
    opts->common.output.color = output_wants_color();
    action = [opts] { return run_k8s(*opts); };
  });
}

}  // namespace hangscan::cli
