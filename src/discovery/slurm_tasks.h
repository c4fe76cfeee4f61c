// Which processes on this machine are a Slurm job's tasks on one Slurm node, from their
// environments.
//
// Why here: it is discovery (which local processes a capture takes), and both rounds of the node
// agent (fanout/agent.h: the capture and the core round) and the node-local watch use it.
// It keys on the Slurm node name (SLURMD_NODENAME), never on the machine's hostname: several
// slurmd may share a host (multiple-slurmd, containers, this project's test cluster), and then
// every task of every "node" is visible here, so a task belongs to this node only when its own
// environment says so. Steps that are hangscan's own (the agent step, and the step the front end
// runs in when started inside the allocation) are left out by step id.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hangscan {

// How a process's environment relates to a Slurm job on a node.
enum class SlurmTaskMatch {
  other,     // another job, another node, or no Slurm environment
  task,      // a task of a job step on this node (ranks and their children)
  batch,     // the batch step (the job script and the srun it runs): no SLURM_STEP_ID
  excluded,  // a step of hangscan's own
};

SlurmTaskMatch classify_slurm_environment(const std::vector<std::string>& env,
                                          const std::string& job_id, const std::string& node,
                                          const std::vector<std::string>& exclude_steps);

struct SlurmTasks {
  std::vector<int> pids;     // tasks, ascending; the batch step only when no task exists
  std::size_t batch = 0;     // batch-step processes seen
  std::size_t excluded = 0;  // processes of hangscan's own steps
};

// Scans `proc_root` for the job's processes on `node`. Processes running the same executable
// as `self_pid` (other hangscan instances) are left out.
SlurmTasks find_slurm_tasks(const std::string& job_id, const std::string& node,
                            const std::vector<std::string>& exclude_steps,
                            const std::string& proc_root = "/proc", int self_pid = 0);

}  // namespace hangscan
