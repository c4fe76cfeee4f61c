#include "fanout/k8s_logs.h"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <string_view>
#include <thread>

#include "fanout/agent_framing.h"
#include "fanout/k8s.h"
#include "fanout/runner.h"
#include "logs/log_patterns.h"

namespace hangscan {

std::vector<std::string> pod_log_argv(const PodLogOptions& o, const std::string& pod,
                                      bool previous) {
  std::vector<std::string> argv{o.kubectl, "logs"};
  if (!o.name_space.empty()) argv.insert(argv.end(), {"-n", o.name_space});
  argv.push_back(pod);
  if (!o.container.empty()) argv.insert(argv.end(), {"-c", o.container});
  if (previous) argv.push_back("--previous");
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

// The pods whose log container restarted, from a fresh pod list ("" on any trouble: then no
// --previous log is asked for).
std::set<std::string> restarted_pods(const PodLogOptions& o, const Deadline& deadline) {
  CommandSpec spec;
  spec.argv = {o.kubectl, "get", "pods", "-o", "json", "-l", o.selector};
  if (!o.name_space.empty()) spec.argv.insert(spec.argv.end(), {"-n", o.name_space});
  spec.max_stdout = std::size_t{64} << 20;
  std::set<std::string> restarted;
  auto r = run_command(spec, deadline);
  if (!r || !r->succeeded()) return restarted;
  auto pods = parse_pod_list(r->out, o.container);
  if (!pods) return restarted;
  for (const auto& p : *pods) {
    if (p.restarts > 0) restarted.insert(p.name);
  }
  return restarted;
}

PodLog fetch_one(const PodLogOptions& o, const PodLog& asked, const Deadline& deadline) {
  PodLog log = asked;
  const std::string& pod = log.pod;
  const std::string& path = log.path;
  CommandSpec spec;
  spec.argv = path.empty() ? pod_log_argv(o, pod, log.previous) : pod_file_argv(o, pod, path);
  spec.max_stdout = o.max_bytes;
  auto r = run_command(spec, deadline);
  const std::string what = path.empty() ? "kubectl logs" : "kubectl exec tail";
  if (r)
    log.command = fmt::format("{} -> {} in {} ms", describe_argv(spec.argv),
                              r->timed_out ? "timed out" : fmt::format("exit {}", r->exit_code),
                              r->elapsed.count());
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
  Deadline deadline = Deadline::after(o.timeout);
  std::set<std::string> restarted;
  if (o.container_log && !o.selector.empty()) restarted = restarted_pods(o, deadline);
  std::vector<PodLog> work;
  for (const auto& pod : pods) {
    if (restarted.count(pod) > 0) work.push_back(PodLog{pod, "", true, {}, {}});
    if (o.container_log) work.push_back(PodLog{pod, "", false, {}, {}});
    for (const auto& path : o.files) work.push_back(PodLog{pod, path, false, {}, {}});
  }
  std::vector<PodLog> logs(work.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < work.size();) logs[i] = fetch_one(o, work[i], deadline);
  };
  std::vector<std::thread> threads;
  std::size_t n = std::min(work.size(), std::max<std::size_t>(1, o.parallel));
  for (std::size_t i = 0; i < n; ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return logs;
}

std::optional<double> strip_kubectl_times(std::string& text) {
  std::string lines;
  lines.reserve(text.size());
  std::optional<double> last;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line(text.data() + at, end - at);
    std::size_t space = line.find(' ');
    auto time = space == std::string_view::npos ? std::nullopt : parse_log_time(line);
    if (time) {
      line.remove_prefix(space + 1);
      if (line.find_first_not_of(" \t\r") != std::string_view::npos) last = time;
    }
    lines.append(line).push_back('\n');
    at = end + 1;
  }
  text = std::move(lines);
  return last;
}

PodLogTexts pod_log_texts(const PodLogOptions& options, const ClusterRun& run) {
  std::vector<std::string> pods;
  for (const auto& [pod, snap] : run.result.nodes) pods.push_back(pod);
  PodLogTexts out;
  for (PodLog& log : fetch_pod_logs(options, pods)) {
    if (!log.command.empty()) out.commands.push_back(std::move(log.command));
    LogText t;
    t.name = !log.path.empty() ? log.pod + ":" + log.path
             : log.previous    ? "kubectl logs --previous " + log.pod
                               : "kubectl logs " + log.pod;
    t.text = std::move(log.text);
    t.error = std::move(log.error);
    if (log.path.empty()) t.modified = strip_kubectl_times(t.text);
    std::set<int> ranks;
    for (const auto& p : run.merged.processes) {
      if (p.host == log.pod && p.rank) ranks.insert(*p.rank);
    }
    if (ranks.size() == 1) t.rank = *ranks.begin();
    out.texts.push_back(std::move(t));
  }
  return out;
}

}  // namespace hangscan
