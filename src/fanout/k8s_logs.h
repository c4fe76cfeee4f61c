// `hangscan k8s --pod-logs`: each pod's own log (`kubectl logs`), to join with its ranks' stacks.
//
// Why: on Kubernetes a rank's stdout and stderr go to the container runtime, not to a file the
// operator can name; `kubectl logs POD` is where the job's own words are (the c10d watchdog's
// timeouts, tracebacks, torchrun's summary). hangscan asks kubectl for the tail of every pod that
// answered, in parallel under one deadline, and hands the texts to the log reader as if each were
// a file named after its pod. Every call is an argv; the pod names are the plan's (checked).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace hangscan {

struct PodLogOptions {
  std::string kubectl = "kubectl";
  std::string name_space;          // -n; "" = kubectl's current namespace (as the plan used)
  std::string container;           // -c; "" = the pod's default container, as kubectl picks it
  std::size_t tail_lines = 20000;  // --tail: the end is what tells
  std::size_t max_bytes = std::size_t{64} << 20;  // per pod (the first bytes: --tail bounds it)
  std::size_t parallel = 32;
  std::chrono::milliseconds timeout{30000};  // for all pods together
};

// One pod's log, or why it could not be had (kubectl's last line).
struct PodLog {
  std::string pod;
  std::string text;
  std::string error;
};

// The kubectl argv that prints `pod`'s log.
std::vector<std::string> pod_log_argv(const PodLogOptions& options, const std::string& pod);

// `kubectl logs` of every pod, in the order given.
std::vector<PodLog> fetch_pod_logs(const PodLogOptions& options,
                                   const std::vector<std::string>& pods);

}  // namespace hangscan
