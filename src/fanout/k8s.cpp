#include "fanout/k8s.h"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "fanout/agent_framing.h"
#include "fanout/hostlist.h"
#include "fanout/runner.h"
#include "util/parse_number.h"

namespace hangscan {

namespace {

using nlohmann::json;

// The labels that number a job's pods (PyTorchJob, JobSet / Indexed Job, Volcano).
constexpr const char* kIndexLabels[] = {"training.kubeflow.org/replica-index",
                                        "batch.kubernetes.io/job-completion-index",
                                        "volcano.sh/task-index"};

std::string string_at(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A copy (pod documents are small): an absent or mistyped member reads as an empty object.
json object_at(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : json::object();
}

std::optional<long> index_label(const json& labels) {
  for (const char* label : kIndexLabels) {
    if (auto v = parse_int<long>(string_at(labels, label))) return v;
  }
  return std::nullopt;
}

std::string pick_container(const json& pod, const std::string& wanted) {
  std::vector<std::string> names;
  const json spec = object_at(pod, "spec");
  if (auto it = spec.find("containers"); it != spec.end() && it->is_array()) {
    for (const auto& c : *it) {
      if (c.is_object()) names.push_back(string_at(c, "name"));
    }
  }
  if (!wanted.empty()) return wanted;  // kubectl says so when the pod has no such container
  std::string annotated = string_at(object_at(object_at(pod, "metadata"), "annotations"),
                                    "kubectl.kubernetes.io/default-container");
  if (!annotated.empty()) return annotated;
  return names.empty() ? std::string() : names.front();
}

// How often `container` of the pod was restarted (its earlier run's log is kubectl logs
// --previous).
long restart_count(const json& pod, const std::string& container) {
  const json status = object_at(pod, "status");
  auto it = status.find("containerStatuses");
  if (it == status.end() || !it->is_array()) return 0;
  for (const auto& c : *it) {
    if (!c.is_object() || string_at(c, "name") != container) continue;
    auto n = c.find("restartCount");
    if (n != c.end() && n->is_number_integer()) return std::max<long>(0, n->get<long>());
  }
  return 0;
}

// A pod or container name from the document, safe as one argv word (DNS label rules).
bool valid_name(std::string_view name) {
  return !name.empty() && validate_host_name(name).ok() && name.front() != '-';
}

// A Kubernetes UID as the API server makes them (8-4-4-4-12 lowercase hex digits), else "".
std::string valid_uid(const std::string& uid) {
  if (uid.size() != 36) return {};
  for (std::size_t i = 0; i < uid.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    const char c = uid[i];
    if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return {};
  }
  return uid;
}

// `kubectl exec [-n NS] POD -c CONTAINER`: into the pod's node agent when node_agent is set,
// into the debug container of this round when `debug` (it shares the trainer's pid namespace),
// else into the pod's container.
std::vector<std::string> exec_prefix(const K8sOptions& o, const K8sPod& pod, bool debug) {
  std::vector<std::string> argv{o.kubectl, "exec"};
  const bool agent = !o.node_agent.empty();
  const std::string& ns = agent ? pod.agent_namespace : pod.name_space;
  if (!ns.empty()) argv.insert(argv.end(), {"-n", ns});
  argv.insert(argv.end(), {agent ? pod.agent_pod : pod.name, "-c",
                           agent   ? pod.agent_container
                           : debug ? o.debug_container
                                   : pod.container});
  return argv;
}

}  // namespace

Result<std::vector<K8sPod>> parse_pod_list(std::string_view text, const std::string& container) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("items") ||
      !doc["items"].is_array()) {
    return Error(Errc::bad_data, "kubectl get pods did not print a pod list (JSON with items)");
  }
  std::vector<K8sPod> pods;
  for (const auto& item : doc["items"]) {
    if (!item.is_object()) continue;
    const json meta = object_at(item, "metadata");
    K8sPod pod;
    pod.name = string_at(meta, "name");
    pod.name_space = string_at(meta, "namespace");
    pod.container = pick_container(item, container);
    pod.phase = string_at(object_at(item, "status"), "phase");
    pod.terminating = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
    pod.index = index_label(object_at(meta, "labels"));
    pod.restarts = restart_count(item, pod.container);
    pod.uid = valid_uid(string_at(meta, "uid"));
    pod.node_name = string_at(object_at(item, "spec"), "nodeName");
    if (!valid_name(pod.node_name)) pod.node_name.clear();
    if (!valid_name(pod.name) || (!pod.name_space.empty() && !valid_name(pod.name_space)) ||
        !valid_name(pod.container))
      continue;
    pods.push_back(std::move(pod));
  }
  std::stable_sort(pods.begin(), pods.end(), [](const K8sPod& a, const K8sPod& b) {
    return std::make_pair(a.index.value_or(-1), a.name) <
           std::make_pair(b.index.value_or(-1), b.name);
  });
  return pods;
}

void assign_node_agents(std::vector<K8sPod>& pods, const std::vector<K8sPod>& agents) {
  for (auto& pod : pods) {
    auto it = std::find_if(agents.begin(), agents.end(), [&](const K8sPod& a) {
      return !pod.node_name.empty() && a.node_name == pod.node_name && a.phase == "Running" &&
             !a.terminating;
    });
    if (it == agents.end()) continue;
    pod.agent_pod = it->name;
    pod.agent_namespace = it->name_space;
    pod.agent_container = it->container;
  }
}

std::vector<std::string> k8s_exec_argv(const K8sOptions& o, const K8sPod& pod,
                                       std::chrono::milliseconds agent_timeout) {
  std::vector<std::string> argv;
  if (o.debug_image.empty()) {
    argv = exec_prefix(o, pod, false);
  } else {
    argv = {o.kubectl, "debug"};
    if (!pod.name_space.empty()) argv.insert(argv.end(), {"-n", pod.name_space});
    // --profile=general: CAP_SYS_PTRACE (the legacy default profile lacks it); --attach: wait
    // for the container and pass its output through (without -i kubectl debug returns at once);
    // --quiet: no "Defaulting debug container name" line.
    argv.insert(argv.end(), {pod.name, "--image=" + o.debug_image, "--target=" + pod.container,
                             "--profile=general", "--attach=true", "--quiet"});
    if (!o.debug_container.empty()) argv.push_back("--container=" + o.debug_container);
  }
  argv.insert(argv.end(),
              {"--", o.agent_path, o.agent_subcommand, "--match", o.match, "--timeout-ms",
               std::to_string(agent_timeout.count()), "--node", pod.name});
  // On the node, by host pid: the job pod's processes are those in its cgroup.
  if (!o.node_agent.empty()) argv.insert(argv.end(), {"--pod-uid", pod.uid});
  argv.insert(argv.end(), o.agent_args.begin(), o.agent_args.end());
  return argv;
}

std::vector<std::string> k8s_debug_log_argv(const K8sOptions& o, const K8sPod& pod) {
  std::vector<std::string> argv{o.kubectl, "logs"};
  if (!pod.name_space.empty()) argv.insert(argv.end(), {"-n", pod.name_space});
  argv.insert(argv.end(), {pod.name, "-c", o.debug_container});
  return argv;
}

std::vector<std::string> k8s_copy_argv(const K8sOptions& o, const K8sPod& pod) {
  std::string where = pod.name_space.empty() ? pod.name : pod.name_space + "/" + pod.name;
  return {o.kubectl, "cp", "-c", pod.container, o.copy_dir, where + ":" + o.copy_dest};
}

std::vector<std::string> k8s_remove_argv(const K8sOptions& o, const K8sPod& pod) {
  std::vector<std::string> argv{o.kubectl, "exec"};
  if (!pod.name_space.empty()) argv.insert(argv.end(), {"-n", pod.name_space});
  argv.insert(argv.end(), {pod.name, "-c", pod.container, "--", "rm", "-rf", o.copy_dest});
  return argv;
}

std::vector<std::string> k8s_end_watch_argv(const K8sOptions& o, const K8sPod& pod) {
  std::vector<std::string> argv = exec_prefix(o, pod, !o.debug_image.empty());
  argv.insert(argv.end(), {"--", o.agent_path, "watch", "--end-window", "--node", pod.name});
  return argv;
}

std::string k8s_debug_container_name() {
  return fmt::format("hangscan-{:08x}", std::random_device{}());
}

LaunchPlan k8s_launch_plan(const std::vector<K8sPod>& pods, const std::string& selector) {
  LaunchPlan plan;
  for (const auto& p : pods) plan.nodes.push_back(p.name);
  plan.description =
      fmt::format("{} pod{} of '{}'", pods.size(), pods.size() == 1 ? "" : "s", selector);
  return plan;
}

namespace {

// `kubectl get pods -o json -l SELECTOR [-n NS]`, parsed (an empty list is no error here).
Result<std::vector<K8sPod>> get_pods(const K8sOptions& o, const std::string& selector,
                                     const std::string& name_space, const std::string& container) {
  std::vector<std::string> argv{o.kubectl, "get", "pods", "-o", "json", "-l", selector};
  if (!name_space.empty()) argv.insert(argv.end(), {"-n", name_space});
  CommandSpec spec;
  spec.argv = argv;
  spec.max_stdout = std::size_t{64} << 20;
  auto r = run_command(spec, Deadline::after(o.timeout));
  if (!r) return r.error().with_context("kubectl");
  if (!r->succeeded()) {
    auto lines = output_lines(r->err);
    std::string last = lines.empty() ? std::string("no message") : std::string(lines.back());
    return Error(Errc::not_found, fmt::format("{} failed: {}", describe_argv(argv), last), 0,
                 "check that kubectl reaches the cluster (kubectl get pods) and that you may "
                 "list pods in the namespace (-n)");
  }
  return parse_pod_list(r->out, container);
}

}  // namespace

Result<std::vector<K8sPod>> list_k8s_pods(const K8sOptions& o) {
  auto pods = get_pods(o, o.selector, o.name_space, o.container);
  if (!pods) return pods.error();
  if (pods->empty()) {
    return Error(Errc::usage, fmt::format("no pods match the selector '{}'", o.selector), 0,
                 "list the job's labels with kubectl get pods --show-labels, e.g. "
                 "job-name=NAME or training.kubeflow.org/job-name=NAME");
  }
  if (o.node_agent.empty()) return pods;
  // The agent pods' own default container: the job's --container names a container of the job.
  auto agents = get_pods(o, o.node_agent, o.node_agent_namespace, "");
  if (!agents) return agents.error();
  if (agents->empty()) {
    return Error(
        Errc::usage,
        fmt::format("no pods match the node agent selector '{}'{}", o.node_agent,
                    o.node_agent_namespace.empty() ? std::string()
                                                   : " in namespace " + o.node_agent_namespace),
        0,
        "list the DaemonSet's pods with kubectl get pods -A -l SELECTOR -o wide and "
        "pass its namespace with --node-agent-namespace");
  }
  assign_node_agents(*pods, *agents);
  return pods;
}

namespace {

// Why a pod was not asked, or "" when it can be.
std::string not_runnable(const K8sOptions& o, const K8sPod& pod) {
  if (pod.terminating) return "pod is terminating";
  if (pod.phase != "Running")
    return fmt::format("pod phase {}", pod.phase.empty() ? "unknown" : pod.phase);
  if (o.node_agent.empty()) return {};
  if (pod.uid.empty()) return "pod has no UID (metadata.uid): its processes cannot be told apart";
  if (pod.agent_pod.empty())
    return fmt::format("no Running node agent pod ({}) on node {}", o.node_agent,
                       pod.node_name.empty() ? "unknown" : pod.node_name);
  return {};
}

class K8sLauncher : public Launcher {
 public:
  explicit K8sLauncher(K8sOptions options) : options_(std::move(options)) {}

  Result<LaunchPlan> plan() override {
    auto pods = list_k8s_pods(options_);
    if (!pods) return pods.error();
    pods_ = std::move(*pods);
    return k8s_launch_plan(pods_, options_.selector);
  }

  AgentAnswers run_agents(const std::vector<std::string>& nodes,
                          const std::vector<std::string>& agent_args,
                          const AnswerWatch& watch) const override;

 private:
  K8sOptions options_;
  std::vector<K8sPod> pods_;
};

// One round of `kubectl exec`s: every asked pod's agent, `parallel` at once, under one deadline.
// The output of every exec goes into one FrameCollector keyed by pod (one stream per pod).
class ExecRound {
 public:
  ExecRound(const K8sOptions& options, const AnswerWatch& watch, std::size_t total)
      : options_(options),
        watch_(watch),
        total_(total),
        deadline_(Deadline::after(options.timeout)) {
    frames_.on_document(watch.document);
  }

  void run(const std::vector<const K8sPod*>& pods) {
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
      for (std::size_t i; (i = next++) < pods.size();) exec_in(*pods[i]);
    };
    std::vector<std::thread> threads;
    std::size_t n = std::min(pods.size(), std::max<std::size_t>(1, options_.parallel));
    for (std::size_t i = 0; i < n; ++i) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
  }

  // Documents and failures into `book` (a failure only where no document came).
  void record(VerdictBook& book) {
    book.record(decode_outputs(frames_.outputs(), NodeKey::stream));
    auto pending = book.pending();
    for (auto& [pod, reason] : failures_) {
      if (std::find(pending.begin(), pending.end(), pod) != pending.end())
        book.note_failure(pod, std::move(reason));
    }
  }

  bool timed_out() const { return timed_out_; }
  std::vector<std::string> take_log() { return std::move(log_); }

 private:
  // The dist tree into the pod, the agent, the tree out again (when copy_dir is set).
  void exec_in(const K8sPod& pod) {
    if (!options_.copy_dir.empty() && !kubectl(pod, k8s_copy_argv(options_, pod), "kubectl cp"))
      return;
    agent_in(pod);
    if (!options_.copy_dir.empty()) kubectl(pod, k8s_remove_argv(options_, pod), "");
  }

  // A kubectl call that sends no agent output; false (and the pod's failure, when `what` names
  // it) when it did not succeed.
  bool kubectl(const K8sPod& pod, std::vector<std::string> argv, const char* what) {
    CommandSpec spec;
    spec.argv = std::move(argv);
    auto r = run_command(spec, deadline_);
    std::lock_guard lock(mu_);
    if (r)
      log_.push_back(fmt::format("{} -> exit {} in {} ms", describe_argv(spec.argv), r->exit_code,
                                 r->elapsed.count()));
    if (r && r->succeeded()) return true;
    if (what[0] == '\0') return false;
    std::string reason;
    if (!r) {
      reason = r.error().what();
    } else {
      auto lines = output_lines(r->err);
      reason = lines.empty() ? fmt::format("{} failed (exit {})", what, r->exit_code)
                             : fmt::format("{}: {}", what, lines.back().substr(0, 300));
    }
    failures_.emplace_back(pod.name, std::move(reason));
    return false;
  }

  void agent_in(const K8sPod& pod) {
    CommandSpec spec;
    // From what is left of the deadline: a copy before it, or a wait for a free exec slot (-f),
    // took part of it; the margin leaves time for the answer and the removal of a copy.
    spec.argv = k8s_exec_argv(options_, pod, agent_timeout_for(deadline_.remaining()));
    std::size_t lines_seen = 0;
    auto on_line = [&](std::string_view line) {
      ++lines_seen;
      deliver(pod, line);
    };
    auto r = run_command(spec, deadline_, on_line);
    if (!r) {
      std::lock_guard lock(mu_);
      failures_.emplace_back(pod.name, r.error().what());
      return;
    }
    {
      std::lock_guard lock(mu_);
      timed_out_ = timed_out_ || r->timed_out;
      log_.push_back(fmt::format("{} -> {} in {} ms", describe_argv(spec.argv),
                                 r->timed_out ? "timed out" : fmt::format("exit {}", r->exit_code),
                                 r->elapsed.count()));
    }
    // kubectl debug attaches only once it has seen the container running: an agent done by then
    // left its document in the container's log alone.
    if (!r->timed_out && lines_seen == 0 && !options_.debug_image.empty() && debug_log_in(pod))
      return;
    auto lines = output_lines(r->err);
    std::lock_guard lock(mu_);
    if (!r->succeeded() && !lines.empty())
      failures_.emplace_back(
          pod.name, fmt::format("kubectl {}: {}", spec.argv[1], lines.back().substr(0, 300)));
  }

  // One line of the agent's output in `pod`, into the collector.
  void deliver(const K8sPod& pod, std::string_view line) {
    std::lock_guard lock(mu_);
    frames_.add_line(pod.name, line);
    if (watch_.progress)
      watch_.progress(
          NodeProgress{frames_.finished() - frames_.failed(), frames_.failed(), total_});
  }

  // The debug container's log (kubectl logs -c NAME) as the agent's output; true when it held
  // something.
  bool debug_log_in(const K8sPod& pod) {
    CommandSpec spec;
    spec.argv = k8s_debug_log_argv(options_, pod);
    std::size_t lines_seen = 0;
    auto r = run_command(spec, deadline_, [&](std::string_view line) {
      ++lines_seen;
      deliver(pod, line);
    });
    std::lock_guard lock(mu_);
    if (r)
      log_.push_back(fmt::format("{} -> exit {} in {} ms", describe_argv(spec.argv), r->exit_code,
                                 r->elapsed.count()));
    return lines_seen > 0;
  }

  const K8sOptions& options_;
  const AnswerWatch& watch_;
  std::size_t total_;
  Deadline deadline_;
  std::mutex mu_;  // guards everything below
  FrameCollector frames_;
  std::vector<std::string> log_;
  std::vector<std::pair<std::string, std::string>> failures_;
  bool timed_out_ = false;
};

AgentAnswers K8sLauncher::run_agents(const std::vector<std::string>& nodes,
                                     const std::vector<std::string>& agent_args,
                                     const AnswerWatch& watch) const {
  auto started = std::chrono::steady_clock::now();
  K8sOptions round = options_;
  round.agent_args = agent_args;
  // Ephemeral containers stay in the pod: each round's needs a name of its own, which the
  // fallback to its log (debug_log_in) names too.
  if (!round.debug_image.empty() && round.debug_container.empty())
    round.debug_container = k8s_debug_container_name();
  VerdictBook book(nodes);
  std::vector<const K8sPod*> asked;
  for (const auto& n : nodes) {
    auto it =
        std::find_if(pods_.begin(), pods_.end(), [&](const K8sPod& p) { return p.name == n; });
    if (it == pods_.end()) {
      book.note_failure(n, "not a pod of the job");
    } else if (auto why = not_runnable(options_, *it); !why.empty()) {
      book.note_failure(n, why);
    } else {
      asked.push_back(&*it);
    }
  }
  ExecRound exec(round, watch, nodes.size());
  exec.run(asked);
  exec.record(book);
  if (watch.progress)
    watch.progress(NodeProgress{book.answered(), book.settled() - book.answered(), nodes.size()});
  return std::move(book).finish(exec.timed_out(), options_.timeout, exec.take_log(), started);
}

}  // namespace

std::unique_ptr<Launcher> make_k8s_launcher(K8sOptions options) {
  return std::make_unique<K8sLauncher>(std::move(options));
}

}  // namespace hangscan
