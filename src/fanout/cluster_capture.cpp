#include "fanout/cluster_capture.h"

#include <utility>

#include "fanout/cluster_cores.h"

namespace hangscan {

Result<ClusterOutcome> run_cluster_capture(Launcher& launcher, const ClusterRequest& request,
                                           const ClusterHooks& hooks) {
  auto plan = launcher.plan();
  if (!plan) return plan.error();
  if (hooks.planned) hooks.planned(*plan);
  ClusterOutcome out;
  out.run =
      run_cluster(launcher, *plan, capture_flag_args(request.capture), hooks.progress, hooks.note);
  out.plan = std::move(*plan);
  JobLogs logs = request.logs;
  if (hooks.node_logs) {
    for (auto& text : hooks.node_logs(out.run)) logs.texts.push_back(std::move(text));
  }
  auto analysis = analyze_job(out.run.merged, request.group);
  if (!analysis) return analysis.error();
  out.analysis = std::move(*analysis);
  out.log_problems = join_job_logs(out.run.merged, out.analysis, logs);
  const bool reported = !hooks.report || hooks.report(out);
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
