#include "fanout/launcher.h"

#include "fanout/early_reader.h"

namespace hangscan {

ClusterRun run_cluster(const Launcher& launcher, const LaunchPlan& plan,
                       const std::vector<std::string>& capture_args,
                       const std::function<void(const NodeProgress&)>& progress,
                       const std::function<void(const EarlyNote&)>& note) {
  ClusterRun run;
  EarlyReader early({}, 0, note);
  AnswerWatch watch{progress, [&early](const std::string& doc) { early.submit(doc); }};
  AgentAnswers answers = launcher.run_agents(plan.nodes, capture_args, watch);
  run.result = read_job_answers(std::move(answers), ReadLimits{}, &early);
  run.merged = run.result.merged(plan.job_id, plan.world_size);
  launcher.annotate(run.merged);
  return run;
}

}  // namespace hangscan
