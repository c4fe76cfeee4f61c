#include "fanout/launcher.h"

namespace hangscan {

ClusterRun run_cluster(const Launcher& launcher, const LaunchPlan& plan,
                       const std::vector<std::string>& capture_args, const ProgressFn& progress) {
  ClusterRun run;
  run.result = read_job_answers(launcher.run_agents(plan.nodes, capture_args, progress));
  run.merged = run.result.merged(plan.job_id, plan.world_size);
  launcher.annotate(run.merged);
  return run;
}

}  // namespace hangscan
