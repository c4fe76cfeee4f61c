#include "watchdog/k8s_watches.h"

#include <fmt/core.h>

#include <utility>

namespace hangscan {

namespace {

// A launcher whose agents get `extra` after the round's own arguments (the in-pod watches'
// --ptrace).
class WithArgs : public Launcher {
 public:
  WithArgs(std::unique_ptr<Launcher> inner, std::vector<std::string> extra)
      : inner_(std::move(inner)), extra_(std::move(extra)) {}
  Result<LaunchPlan> plan() override { return inner_->plan(); }
  AgentAnswers run_agents(const std::vector<std::string>& nodes,
                          const std::vector<std::string>& agent_args,
                          const AnswerWatch& watch) const override {
    std::vector<std::string> args = agent_args;
    args.insert(args.end(), extra_.begin(), extra_.end());
    return inner_->run_agents(nodes, args, watch);
  }

 private:
  std::unique_ptr<Launcher> inner_;
  std::vector<std::string> extra_;
};

class K8sNodeWatches : public NodeWatchFanout {
 public:
  explicit K8sNodeWatches(K8sOptions options) : options_(std::move(options)) {}

  // The pods, once: a pod started later is not in this window (it is a pod of the next run).
  Result<LaunchPlan> plan() override {
    auto lister = make_k8s_launcher(options_);
    auto plan = lister->plan();
    if (plan) plan->job_id = options_.selector;
    return plan;
  }

  std::unique_ptr<Launcher> watches(double window_s,
                                    const std::vector<std::string>& node_args) const override {
    (void)node_args;  // run_agents() gets them
    K8sOptions o = options_;
    o.agent_subcommand = "watch";
    o.timeout = node_watch_timeout(window_s);
    return std::make_unique<WithArgs>(planned(std::move(o)), std::vector<std::string>{"--ptrace"});
  }

  // kubectl exec passes no signal into the pod: each window runs its length (--for), or until
  // its ranks stall (--stall).
  void end_windows() const override {}

  std::unique_ptr<Launcher> capture() const override { return planned(options_); }

  std::string check_hint() const override {
    return "list the pods with 'kubectl get pods -l SELECTOR' and look at one with 'kubectl "
           "describe pod NAME'";
  }

 private:
  // A k8s launcher that knows the pods (run_agents asks only pods its plan() listed).
  static std::unique_ptr<Launcher> planned(K8sOptions o) {
    auto launcher = make_k8s_launcher(std::move(o));
    (void)launcher->plan();  // a failure here leaves every pod "not a pod of the job"
    return launcher;
  }

  K8sOptions options_;
};

}  // namespace

std::unique_ptr<NodeWatchFanout> make_k8s_node_watches(K8sOptions options) {
  return std::make_unique<K8sNodeWatches>(std::move(options));
}

}  // namespace hangscan
