#include "fanout/k8s_logs.h"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "fanout/agent_framing.h"
#include "fanout/runner.h"

namespace hangscan {

std::vector<std::string> pod_log_argv(const PodLogOptions& o, const std::string& pod) {
  std::vector<std::string> argv{o.kubectl, "logs"};
  if (!o.name_space.empty()) argv.insert(argv.end(), {"-n", o.name_space});
  argv.push_back(pod);
  if (!o.container.empty()) argv.insert(argv.end(), {"-c", o.container});
  argv.push_back(fmt::format("--tail={}", o.tail_lines));
  return argv;
}

namespace {

PodLog fetch_one(const PodLogOptions& o, const std::string& pod, const Deadline& deadline) {
  PodLog log;
  log.pod = pod;
  CommandSpec spec;
  spec.argv = pod_log_argv(o, pod);
  spec.max_stdout = o.max_bytes;
  auto r = run_command(spec, deadline);
  if (!r) {
    log.error = r.error().what();
  } else if (!r->succeeded()) {
    auto lines = output_lines(r->err);
    log.error = r->timed_out    ? "kubectl logs did not answer in time"
                : lines.empty() ? fmt::format("kubectl logs failed (exit {})", r->exit_code)
                                : fmt::format("kubectl logs: {}", lines.back().substr(0, 300));
  } else {
    log.text = std::move(r->out);
    if (r->stdout_truncated) {
      // Kept from the start by the runner: cut at a line so no half line reads as the last.
      auto cut = log.text.rfind('\n');
      log.text.resize(cut == std::string::npos ? 0 : cut + 1);
    }
  }
  return log;
}

}  // namespace

std::vector<PodLog> fetch_pod_logs(const PodLogOptions& o, const std::vector<std::string>& pods) {
  std::vector<PodLog> logs(pods.size());
  Deadline deadline = Deadline::after(o.timeout);
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < pods.size();) logs[i] = fetch_one(o, pods[i], deadline);
  };
  std::vector<std::thread> threads;
  std::size_t n = std::min(pods.size(), std::max<std::size_t>(1, o.parallel));
  for (std::size_t i = 0; i < n; ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return logs;
}

}  // namespace hangscan
