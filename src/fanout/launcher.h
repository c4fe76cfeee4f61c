// Launcher: how the agents of a fan-out reach their nodes (Slurm's srun, pdsh today).
//
// Why: every cluster mode does the same thing around its launcher: find the nodes, run
// `hangscan agent` on each with the capture flags, read back one document per node, merge,
// and (--gcore) run a second, shorter round on the nodes holding a chosen process. Only how
// the agents are started differs, so that is all a launcher is; a new one (Flux, PBS,
// Kubernetes) is one file implementing this interface, and run_cluster() is shared.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fanout/collector.h"
#include "fanout/early_suspects.h"
#include "hangscan/model.h"
#include "hangscan/result.h"
#include "util/deadline.h"

namespace hangscan {

// What a launcher will run on.
struct LaunchPlan {
  std::string job_id;              // the scheduler's job id; "" when there is none (pdsh)
  std::optional<int> world_size;   // the job's task count, when the scheduler knows it
  std::vector<std::string> nodes;  // every node of the capture round
  std::string description;         // one line for -v ("" when there is nothing to say)
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  // The nodes to ask. Errors when the job cannot be captured at all (unknown, pending), with
  // Errc::usage for what the user gave wrong.
  virtual Result<LaunchPlan> plan() = 0;
  // Runs `hangscan agent` with `agent_args` once on each of `nodes`, within the launcher's
  // own deadline, and collects what they sent; a node without a usable answer is unreachable.
  // `watch` (members may be empty) is told how many nodes have answered and gets each
  // document as it arrives.
  virtual AgentAnswers run_agents(const std::vector<std::string>& nodes,
                                  const std::vector<std::string>& agent_args,
                                  const AnswerWatch& watch) const = 0;
  // Adds what the scheduler itself recorded of the job (Slurm: sacct's step states joined to
  // the deaths) to the merged report; nothing by default.
  virtual void annotate(JobSnapshot& /*job*/) const {}
};

// The capture round of a cluster mode, merged.
struct ClusterRun {
  FanoutResult result;
  JobSnapshot merged;
};

// Runs the agents with `capture_args` on every node of `plan`, reads each answer as it arrives
// (on worker threads) and merges them (as the plan's job, with its world size). `progress`
// (may be empty) is told how many nodes have answered; `note` (may be empty) gets the early
// notes on odd ranks (EarlySuspects) from the reader threads, while nodes still answer.
ClusterRun run_cluster(const Launcher& launcher, const LaunchPlan& plan,
                       const std::vector<std::string>& capture_args,
                       const std::function<void(const NodeProgress&)>& progress,
                       const std::function<void(const EarlyNote&)>& note = {});

}  // namespace hangscan
