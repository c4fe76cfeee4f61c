// `hangscan --slurm-job ID` (also `--jobid ID`): every rank of a Slurm job, merged.
//
// A top-level option rather than a subcommand because that is how people say it ("hangscan
// the job"); the output flags sit on the top level with it.
#include <fmt/core.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "fanout/slurm.h"
#include "fanout_cli.h"
#include "gcore_cmd.h"

namespace hangscan::cli {

namespace {

struct SlurmCliOptions {
  std::string job_id;
  FanoutCliOptions fanout;
  GcoreDumpOptions gcore;
};

int run_slurm(const SlurmCliOptions& o) {
  if (auto g = group_options(o.fanout.output); !g) {
    print_error(g.error());
    return kExitUsage;
  }
  if (auto st = check_gcore_options(o.gcore); !st) {
    print_error(st.error());
    return kExitUsage;
  }
  auto agent = resolve_agent_path(o.fanout.agent_path);
  if (!agent) {
    print_error(agent.error());
    return agent.error().code == Errc::usage ? kExitUsage : kExitNothing;
  }
  SlurmOptions s;
  s.job_id = o.job_id;
  s.agent_path = *agent;
  s.agent_args = capture_flag_args(o.fanout.capture);
  s.timeout = std::chrono::milliseconds(static_cast<long long>(o.fanout.timeout_s * 1000));
  s.context = slurm_context_from_environment();
  s.progress = tty_progress();

  auto job = resolve_slurm_job(s, Deadline::after(s.timeout));
  if (!job) {
    print_error(job.error());
    return job.error().code == Errc::usage ? kExitUsage : kExitNothing;
  }
  if (o.fanout.verbose) {
    fmt::print(stderr, "hangscan: job {} {} on {} node(s) {}, {} task(s)\n", job->id, job->state, job->nodes.size(),
               job->nodelist, job->num_tasks ? std::to_string(*job->num_tasks) : "unknown");
  }
  FanoutResult result = read_job_answers(run_slurm_agents(s, job->nodes));
  JobSnapshot merged = result.merged(job->id, job->num_tasks);
  int rc = finish_fanout(result, merged, o.fanout);
  // The core round: the same srun, deadline and collector, on the nodes holding a chosen
  // process, with a fresh --timeout (writing a core takes longer than a capture).
  SlurmOptions round = s;
  round.progress = {};
  return finish_cluster_cores(rc, result, merged, o.fanout, o.gcore, [&round](const auto& nodes, const auto& args) {
    round.agent_args = args;
    return run_slurm_agents(round, nodes);
  });
}

}  // namespace

void add_slurm_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<SlurmCliOptions>();
  app.add_option("--slurm-job,--jobid", opts->job_id, "Capture every rank of this Slurm job (on every node)");
  add_fanout_options(&app, opts->fanout);
  add_output_options(&app, opts->fanout.output);
  add_gcore_dump_options(&app, opts->gcore);
  app.final_callback([opts, &action, &app] {
    if (opts->job_id.empty()) {
      if (opts->gcore.requested() && app.get_subcommands().empty()) {
        throw CLI::ValidationError("--gcore", "needs --slurm-job ID here (or use dump --gcore, pdsh --gcore)");
      }
      return;
    }
    if (!app.get_subcommands().empty()) {
      throw CLI::ValidationError("--slurm-job", "cannot be combined with a subcommand");
    }
    opts->fanout.output.color = output_wants_color();
    action = [opts] { return run_slurm(*opts); };
  });
}

}  // namespace hangscan::cli
