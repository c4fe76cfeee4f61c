#include "watchdog/k8s_watches.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <utility>

#include "fanout/runner.h"
#include "proc/proc_facts.h"
#include "proc/proc_files.h"
#include "util/deadline.h"
#include "util/unique_fd.h"

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
    auto pods = list_k8s_pods(options_);
    if (!pods) return pods.error();
    pods_ = std::move(*pods);
    LaunchPlan plan = k8s_launch_plan(pods_, options_.selector);
    plan.job_id = options_.selector;
    return plan;
  }

  std::unique_ptr<Launcher> watches(double window_s,
                                    const std::vector<std::string>& node_args) const override {
    (void)node_args;  // run_agents() gets them
    K8sOptions o = options_;
    o.agent_subcommand = "watch";
    o.timeout = node_watch_timeout(window_s);
    // Named here, so end_windows() can reach the watch in this round's ephemeral container.
    if (!o.debug_image.empty()) o.debug_container = k8s_debug_container_name();
    round_debug_container_ = o.debug_container;
    // In a pod's own pid namespace only ptrace sees its processes; a node agent (hostPID) sees
    // them by host pid, as the eBPF recorder does.
    std::vector<std::string> extra;
    if (o.node_agent.empty()) extra.push_back("--ptrace");
    return std::make_unique<WithArgs>(planned(std::move(o)), std::move(extra));
  }

  // kubectl exec passes no signal into the pod: a second exec in each running pod (into the
  // round's ephemeral container with --debug-image, into the pod's node agent with
  // --node-agent) tells its watch (`watch --end-window`), all pods at once, each within 10 s.
  void end_windows() const override {
    K8sOptions o = options_;
    o.debug_container = round_debug_container_;
    std::vector<std::thread> threads;
    const Deadline deadline = Deadline::after(std::chrono::seconds(10));
    for (const auto& pod : pods_) {
      if (pod.phase != "Running" || pod.terminating) continue;
      if (!o.node_agent.empty() && pod.agent_pod.empty()) continue;
      threads.emplace_back([&o, &pod, deadline] {
        CommandSpec spec;
        spec.argv = k8s_end_watch_argv(o, pod);
        (void)run_command(spec, deadline);  // a pod whose watch ended already has none to end
      });
    }
    for (auto& t : threads) t.join();
  }

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
  std::vector<K8sPod> pods_;  // plan()'s
  // The ephemeral containers' name of the last watches() (--debug-image), for end_windows().
  mutable std::string round_debug_container_;
};

// Whether `pid` runs `self` as the node-local watch of `node` with its stop signals blocked
// (a SIGUSR1 sooner would end it without its report: the front end asks again a second later).
bool is_node_watch_of(int pid, const std::string& self, const std::string& node) {
  const std::string dir = fmt::format("/proc/{}", pid);
  if (self.empty() || read_link(dir + "/exe").value_or("") != self) return false;
  auto cmdline = read_text_file(dir + "/cmdline", 1 << 16);
  auto status = read_text_file(dir + "/status", 1 << 16);
  if (!cmdline || !status) return false;
  auto argv = split_nul(*cmdline);
  bool local = std::find(argv.begin(), argv.end(), "--node-local") != argv.end();
  auto at = std::find(argv.begin(), argv.end(), "--node");
  if (!local || at == argv.end() || at + 1 == argv.end() || *(at + 1) != node) return false;
  return (status_hex(*status, "SigBlk") & (std::uint64_t{1} << (SIGUSR1 - 1))) != 0;
}

// SIGUSR1 to `pid` if it is a node-local watch of `node`. Why a pidfd: the pid could be reused
// between reading its /proc files and a kill(), and SIGUSR1 ends a process that does not handle
// it; the pidfd names the process that was read (it had not exited after the reads, so the pid
// was still its own), and a signal through it reaches no other.
bool tell_if_node_watch(int pid, const std::string& self, const std::string& node) {
  // syscall(): Debian 12's <sys/pidfd.h> declares its wrappers without C linkage.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (pidfd.get() < 0 || !is_node_watch_of(pid, self, node)) return false;
  pollfd exited{pidfd.get(), POLLIN, 0};
  if (::poll(&exited, 1, 0) != 0) return false;  // it exited meanwhile (or poll failed)
  return ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGUSR1, nullptr, 0) == 0;
}

}  // namespace

std::unique_ptr<NodeWatchFanout> make_k8s_node_watches(K8sOptions options) {
  return std::make_unique<K8sNodeWatches>(std::move(options));
}

std::size_t signal_node_watches(const std::string& node) {
  const std::string self = read_link("/proc/self/exe").value_or("");
  std::size_t told = 0;
  for (int pid : list_pids()) {
    if (pid != ::getpid() && tell_if_node_watch(pid, self, node)) ++told;
  }
  return told;
}

}  // namespace hangscan
