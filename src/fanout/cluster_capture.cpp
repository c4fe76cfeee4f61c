#include "fanout/cluster_capture.h"

#include <utility>

#include "fanout/cluster_cores.h"

namespace hangscan {

Result<ClusterOutcome> run_cluster_capture(Launcher& launcher, const ClusterRequest& request,
                                           const ClusterHooks& hooks) {
  std::optional<OutputDir> dir;
  if (request.output) {
    auto opened = open_run_output_dir(request.output->dir);
    if (!opened) return opened.error();
    dir.emplace(std::move(*opened));
  }
  auto plan = launcher.plan();
  if (!plan) return plan.error();
  if (hooks.planned) hooks.planned(*plan);
  ClusterOutcome out;
  out.run =
      run_cluster(launcher, *plan, capture_flag_args(request.capture), hooks.progress, hooks.note);
  out.plan = std::move(*plan);
  JobLogs logs = request.logs;
  if (request.pod_logs) {
    PodLogTexts pods = pod_log_texts(*request.pod_logs, out.run);
    for (auto& text : pods.texts) logs.texts.push_back(std::move(text));
    out.log_commands = std::move(pods.commands);
  }
  auto analysis = analyze_job(out.run.merged, request.group);
  if (!analysis) return analysis.error();
  out.analysis = std::move(*analysis);
  out.log_problems = join_job_logs(out.run.merged, out.analysis, logs);
  bool reported = !hooks.report || hooks.report(out);
  if (dir) {
    out.output = write_cluster_output_files(*dir, out.run.result, out.run.merged, out.analysis,
                                            request.group, *request.output);
    reported &= out.output->failed.empty();
  }
  if (!request.cores || !reported || out.run.result.nodes.empty()) return out;
  // The same launcher, only on the nodes holding a chosen process, with a fresh deadline
  // (writing a core takes longer than a capture), no progress line.
  out.cores = run_cluster_cores(out.run.result, out.run.merged, out.analysis, *request.cores,
                                [&launcher](const auto& nodes, const auto& args) {
                                  return launcher.run_agents(nodes, args, {});
                                });
  return out;
}

}  // namespace hangscan
