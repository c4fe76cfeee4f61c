// `hangscan k8s --pod-logs` and `--pod-log-file`: each pod's own logs, to join with its ranks'
// stacks.
//
// Why: on Kubernetes a rank's stdout and stderr go to the container runtime, not to a file the
// operator can name; `kubectl logs POD` is where the job's own words are (the c10d watchdog's
// timeouts, tracebacks, torchrun's summary). Files a job writes inside its pods (torchrun's
// --log-dir) are reachable only through the pod: `kubectl exec POD -- tail -c N -- PATH` reads
// one as the container's own user, in the container's own root, so hangscan never reads a pod's
// file with more rights than the pod has. hangscan asks kubectl for every pod that answered, in
// parallel under one deadline, and hands the texts to the log reader as files named after their
// pod. Every call is an argv; the pod names are the plan's (checked), each path one word after
// `--`.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "fanout/launcher.h"
#include "logs/log_reader.h"

namespace hangscan {

struct PodLogOptions {
  std::string kubectl = "kubectl";
  std::string name_space;          // -n; "" = kubectl's current namespace (as the plan used)
  std::string container;           // -c; "" = the pod's default container, as kubectl picks it
  bool container_log = false;      // kubectl logs (--pod-logs), --previous too after a restart
  std::string selector;            // the job's pods, asked again for their restart counts
  std::vector<std::string> files;  // absolute paths inside the pods (--pod-log-file)
  std::size_t tail_lines = 20000;  // kubectl logs --tail: the end is what tells
  std::size_t max_bytes = std::size_t{64} << 20;  // per log: the last bytes of a file
  std::size_t parallel = 32;
  std::chrono::milliseconds timeout{30000};  // for all pods together
};

// One log of one pod (`path` "" for kubectl logs), or why it could not be had (kubectl's last
// line).
struct PodLog {
  std::string pod;
  std::string path;
  bool previous = false;  // the container's run before its last restart (kubectl logs --previous)
  std::string text;
  std::string error;
  std::string command;  // the kubectl call and how it went, for --verbose
};

// The kubectl argv that prints `pod`'s container log (every line after its RFC 3339 time:
// --timestamps), and the one that prints the end of the file `path` in it.
std::vector<std::string> pod_log_argv(const PodLogOptions& options, const std::string& pod,
                                      bool previous = false);
std::vector<std::string> pod_file_argv(const PodLogOptions& options, const std::string& pod,
                                       const std::string& path);

// For every pod in the order given: its container log (container_log; first the run before
// its last restart when the pod list says the container restarted), then each file.
std::vector<PodLog> fetch_pod_logs(const PodLogOptions& options,
                                   const std::vector<std::string>& pods);

// kubectl logs --timestamps: each line after the time the runtime received it. Drops the times
// (the lines stay as the job printed them, a launcher's "[rank3]:" first) and returns the last
// non-empty line's time (when the log was last written, as a file's modification time is for
// --logs); nullopt when no line had one.
std::optional<double> strip_kubectl_times(std::string& text);

// The pods' logs as the log reader takes them, and the kubectl calls made (for -v).
struct PodLogTexts {
  std::vector<LogText> texts;
  std::vector<std::string> commands;  // "kubectl ... -> exit 0 in 12 ms"
};

// Why: --pod-logs and --pod-log-file read the logs of every pod that answered `run`'s capture,
// each named after its pod ("kubectl logs POD", "kubectl logs --previous POD", "POD:PATH") and
// given the rank of the pod's one rank when it holds exactly one.
PodLogTexts pod_log_texts(const PodLogOptions& options, const ClusterRun& run);

}  // namespace hangscan
