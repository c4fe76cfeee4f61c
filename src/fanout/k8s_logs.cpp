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
  argv.insert(argv.end(), {fmt::format("--tail={}", o.tail_lines), "--timestamps"});
  return argv;
}

std::vector<std::string> pod_file_argv(const PodLogOptions& o, const std::string& pod,
                                       const std::string& path) {
  std::vector<std::string> argv{o.kubectl, "exec"};
  if (!o.name_space.empty()) argv.insert(argv.end(), {"-n", o.name_space});
  argv.push_back(pod);
  if (!o.container.empty()) argv.insert(argv.end(), {"-c", o.container});
  argv.insert(argv.end(), {"--", "tail", "-c", std::to_string(o.max_bytes), "--", path});
  return argv;
}

namespace {

// The end of a text cut to whole lines: `tail -c` may start inside a line.
void drop_partial_first_line(std::string& text) {
  auto nl = text.find('\n');
  text.erase(0, nl == std::string::npos ? text.size() : nl + 1);
}

PodLog fetch_one(const PodLogOptions& o, const std::string& pod, const std::string& path,
                 const Deadline& deadline) {
  PodLog log{pod, path, {}, {}};
  CommandSpec spec;
  spec.argv = path.empty() ? pod_log_argv(o, pod) : pod_file_argv(o, pod, path);
  spec.max_stdout = o.max_bytes;
  auto r = run_command(spec, deadline);
  const std::string what = path.empty() ? "kubectl logs" : "kubectl exec tail";
  if (!r) {
    log.error = r.error().what();
  } else if (!r->succeeded()) {
    auto lines = output_lines(r->err);
    log.error = r->timed_out    ? fmt::format("{} did not answer in time", what)
                : lines.empty() ? fmt::format("{} failed (exit {})", what, r->exit_code)
                                : fmt::format("{}: {}", what, lines.back().substr(0, 300));
  } else {
    log.text = std::move(r->out);
    if (!path.empty() && log.text.size() >= o.max_bytes) drop_partial_first_line(log.text);
    if (path.empty() && r->stdout_truncated) {
      // kubectl logs past max_bytes: the runner kept the start; no half line reads as the last.
      auto cut = log.text.rfind('\n');
      log.text.resize(cut == std::string::npos ? 0 : cut + 1);
    }
  }
  return log;
}

}  // namespace

std::vector<PodLog> fetch_pod_logs(const PodLogOptions& o, const std::vector<std::string>& pods) {
  std::vector<std::pair<std::string, std::string>> work;  // (pod, path)
  for (const auto& pod : pods) {
    if (o.container_log) work.emplace_back(pod, "");
    for (const auto& path : o.files) work.emplace_back(pod, path);
  }
  std::vector<PodLog> logs(work.size());
  Deadline deadline = Deadline::after(o.timeout);
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < work.size();)
      logs[i] = fetch_one(o, work[i].first, work[i].second, deadline);
  };
  std::vector<std::thread> threads;
  std::size_t n = std::min(work.size(), std::max<std::size_t>(1, o.parallel));
  for (std::size_t i = 0; i < n; ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return logs;
}

}  // namespace hangscan
