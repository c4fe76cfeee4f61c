// `hangscan k8s SELECTOR --match REGEX`: the agent in every pod of a Kubernetes job, merged.
#include <fmt/core.h>
#include <boost/process/search_path.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "cli.h"
#include "fanout/k8s.h"
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
  std::string copy_agent;  // a make dist tree to copy into each pod
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

int run_k8s(const K8sCliOptions& o) {
  if (!cluster_options_valid(o.common, o.gcore, &o.match)) return kExitUsage;
  K8sOptions k;
  if (boost::process::search_path(k.kubectl).empty()) {
    print_error("'kubectl' is not installed here (not found on PATH)",
                "run hangscan where kubectl reaches the cluster (kubectl get pods works)");
    return kExitNothing;
  }
  if (!o.copy_agent.empty()) {
    if (!plan_agent_copy(o, k)) return kExitUsage;
  } else if (o.common.agent_path.empty()) {
    // The agent runs inside the pods: its path there, not this binary's (which may not exist).
    print_error("k8s needs --agent-path: where hangscan is inside the pods",
                "put the tarball of 'make dist' into the image or a shared volume and pass "
                "e.g. --agent-path /opt/hangscan/bin/hangscan (docs/kubernetes.md)");
    return kExitUsage;
  }
  if (k.agent_path.empty()) {
    auto agent = resolve_agent_path(o.common.agent_path);
    if (!agent) {
      print_error(agent.error());
      return kExitUsage;
    }
    k.agent_path = *agent;
  }
  k.selector = o.selector;
  k.name_space = o.name_space;
  k.container = o.container;
  k.match = o.match;
  k.parallel = static_cast<std::size_t>(o.parallel);
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
  sub->add_option("--copy-agent", opts->copy_agent,
                  "The image has no hangscan: copy this unpacked make dist tree into each pod "
                  "(kubectl cp, needs tar there), run it, remove it");
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
