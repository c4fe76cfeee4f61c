// run_cluster_cores(): the core round of `--slurm-job`, `pdsh` and `k8s` with --gcore, as data.
//
// Why: after the merged report, the front end picks members of the whole job (as `dump --gcore`
// does on one machine), asks only the nodes that hold them to write their cores (the request
// syntax and answers: fanout/core_round.h) and pairs every answer with its request. That is
// library work; the CLI maps --gcore to a JobCoresRequest and words the JobCores it gets back.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "corewrite/job_cores.h"
#include "fanout/collector.h"
#include "group/analysis.h"
#include "hangscan/model.h"
#include "hangscan/result.h"

namespace hangscan {

// Runs one core round of agents on `nodes` with `agent_args` (the launcher of the capture
// round, with its deadline) and returns what they sent.
using CoreRoundFn = std::function<AgentAnswers(const std::vector<std::string>& nodes,
                                               const std::vector<std::string>& agent_args)>;

// Picks members of `merged` (the job `result` was merged into) from `analysis` as
// `request.mode` says, runs one round on the nodes that hold them, in the order they were
// asked, with the directory made absolute (the agents run in other working directories), and
// returns one outcome per picked member (a member whose node did not answer gets the reason).
// No round runs when nothing is picked. Errc::usage when the mode is not one.
Result<JobCores> run_cluster_cores(const FanoutResult& result, const JobSnapshot& merged,
                                   const Analysis& analysis, const JobCoresRequest& request,
                                   const CoreRoundFn& run_round);

// `dir` as an absolute, normalized path without a trailing slash ("/x/" -> "/x"); `dir`
// itself when the working directory cannot be read.
std::string absolute_core_dir(const std::string& dir);

}  // namespace hangscan
