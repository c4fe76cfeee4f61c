// `hangscan --slurm-job ID`: every rank of a Slurm job, captured on its own node.
//
// Why: the recipe people copy for a hung job is `srun --jobid=J --overlap --gres=gpu:0 -N 40
// --ntasks-per-node=1 --output=trace-%N.out sh -c 'py-spy dump ...'` and then reading 40 files.
// This module is that recipe as one call: it asks Slurm for the job's nodes and task count,
// runs `hangscan agent` once per node inside the job's allocation (srun --overlap: the ranks
// hold every CPU), reads back one framed document per node, and reports nodes that did not
// answer as unreachable instead of failing. srun aborts the whole step when one node cannot be
// launched, so the nodes that still owe an answer are asked again without the failed ones.
// Everything runs from argv vectors with SLURM_* removed from the environment (but
// SLURM_CONF): when hangscan itself runs inside a step of the job, the outer step's
// SLURM_NTASKS and friends would otherwise be read by srun as its own options.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fanout/collector.h"
#include "fanout/launcher.h"
#include "fanout/runner.h"
#include "hangscan/result.h"
#include "util/deadline.h"

namespace hangscan {

struct SlurmJob {
  std::string id;
  std::string state;               // squeue %T: RUNNING, PENDING, COMPLETING ...
  std::string nodelist;            // as squeue prints it: "n[1-3]"
  std::vector<std::string> nodes;  // expanded by scontrol show hostnames, validated
  std::optional<int> num_tasks;    // scontrol show job: NumTasks (the world size)
  std::optional<double> start;     // scontrol show job: StartTime (Unix seconds)
};

// Where hangscan runs, from its own environment: inside a step of some job or not.
struct SlurmContext {
  std::string job_id;   // SLURM_JOB_ID, "" outside Slurm
  std::string step_id;  // SLURM_STEP_ID, "" outside a step
};
SlurmContext slurm_context_from_environment();

struct SlurmOptions {
  std::string job_id;
  std::string agent_path;                    // absolute path of the hangscan binary on the nodes
  std::string agent_subcommand = "agent";    // `watch` runs its node-local recorder instead
  std::vector<std::string> agent_args;       // capture options forwarded to the agent
  std::chrono::milliseconds timeout{30000};  // for the whole fan-out (every node in parallel)
  SlurmContext context;                      // to exclude our own step from the capture
  std::string srun = "srun";
  std::string squeue = "squeue";
  std::string scontrol = "scontrol";
  std::string sacct = "sacct";
  std::optional<double> job_start;  // passed to the agents (--job-start): their deaths' window
  int max_rounds = 3;               // srun attempts, each without nodes that failed
  AnswerWatch watch;                // progress and documents as they arrive
};

// Parsers of what Slurm prints (pure, unit-tested).
// `squeue -h -j ID -o %i|%T|%N` -> id, state, nodelist (nodes not yet expanded).
Result<SlurmJob> parse_squeue_line(std::string_view output, std::string_view job_id);
// `scontrol show job ID` -> NumTasks, when it is a number.
std::optional<int> parse_num_tasks(std::string_view scontrol_show_job);
// `scontrol show hostnames LIST` -> names, each validated.
Result<std::vector<std::string>> parse_hostnames(std::string_view output);

// One finding in srun's stderr about a node.
struct SrunNodeError {
  std::string node;
  std::string reason;
  bool launch_failed = false;  // the step never started there: do not ask that node again
};
std::vector<SrunNodeError> parse_srun_errors(std::string_view stderr_text);
// srun's own error lines that are about no node ("Unable to create step ..."), last first.
std::vector<std::string> srun_general_errors(std::string_view stderr_text);

// The job's nodes and task count; Errc::not_found for an unknown or finished job,
// Errc::unsupported while it is pending (no rank runs yet).
Result<SlurmJob> resolve_slurm_job(const SlurmOptions& options, const Deadline& deadline);

// srun argv that runs the agent once on each of `nodes` of the job.
std::vector<std::string> build_srun_argv(const SlurmOptions& options,
                                         const std::vector<std::string>& nodes,
                                         std::chrono::milliseconds agent_timeout);

// The environment changes for every Slurm command hangscan runs (see the header comment).
void clean_slurm_environment(CommandSpec& spec);

// Runs the agent (with options.agent_args) on each of `nodes` of the job and collects their
// documents. Never fails as a whole once the job is resolved: nodes without an answer are in
// AgentAnswers::unreachable. The capture round asks every node of the job; the core round
// (--gcore) only the nodes holding a process to write a core of.
AgentAnswers run_slurm_agents(const SlurmOptions& options, const std::vector<std::string>& nodes);

// The Launcher of `--slurm-job`: plan() resolves the job (resolve_slurm_job, within
// options.timeout), run_agents() is run_slurm_agents() with the round's arguments.
std::unique_ptr<Launcher> make_slurm_launcher(SlurmOptions options);

}  // namespace hangscan
