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
#include "fanout/hostlist.h"
#include "fanout/slurm.h"
#include "fanout/slurm_job_logs.h"
#include "fanout_cli.h"
#include "gcore_cmd.h"

namespace hangscan::cli {

namespace {

struct SlurmCliOptions {
  std::string job_id;
  bool job_logs = false;  // --job-logs: the job's StdOut/StdErr too (fanout/slurm_job_logs.h)
  FanoutCliOptions fanout;
  GcoreDumpOptions gcore;
};

int run_slurm(const SlurmCliOptions& o) {
  if (!cluster_options_valid(o.fanout, o.gcore)) return kExitUsage;
  auto agent = resolve_agent_path(o.fanout.agent_path);
  if (!agent) {
    print_error(agent.error());
    return agent.error().code == Errc::usage ? kExitUsage : kExitNothing;
  }
  SlurmOptions s;
  s.job_id = o.job_id;
  s.agent_path = *agent;
  s.timeout = std::chrono::milliseconds(static_cast<long long>(o.fanout.timeout_s * 1000));
  s.context = slurm_context_from_environment();
  FanoutCliOptions fanout = o.fanout;
  if (o.job_logs) {
    JobOutputLogs found = slurm_job_output_logs(o.job_id);
    print_errors(found.problems);
    fanout.output.log_texts = std::move(found.logs);
  }
  return run_cluster_mode(*make_slurm_launcher(std::move(s)), fanout, o.gcore);
}

}  // namespace

void add_slurm_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<SlurmCliOptions>();
  auto* job = app.add_option("--slurm-job,--jobid", opts->job_id,
                             "Capture every rank of this Slurm job (on every node)");
  add_fanout_options(&app, opts->fanout);
  add_output_options(&app, opts->fanout.output);
  app.add_flag("--job-logs", opts->job_logs,
               "With --slurm-job: also the job's StdOut/StdErr (scontrol), read as the job's user");
  add_gcore_dump_options(&app, opts->gcore);
  app.final_callback([opts, &action, &app, job] {
    if (opts->job_id.empty() && job->count() > 0) {  // --slurm-job '': said, not the help
      action = [] {
        print_error(validate_job_id("").error());
        return kExitUsage;
      };
      return;
    }
    if (opts->job_id.empty()) {
      if (opts->gcore.requested() && app.get_subcommands().empty()) {
        throw CLI::ValidationError("--gcore",
                                   "needs --slurm-job ID here (or use dump --gcore, pdsh --gcore)");
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
