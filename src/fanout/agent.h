// The node agent: what `hangscan agent` does on each node of a fan-out.
//
// Why: captures must run where the ranks run (ptrace does not cross machines), and the front
// end needs one small document per node. The agent finds the job's processes on its own node,
// captures them, and returns one JobSnapshot that the CLI writes in the agent wire format.
// Slurm mode keys on the Slurm node name (SLURMD_NODENAME), never on the machine's hostname:
// several slurmd may share a host (multiple-slurmd, containers, this project's test cluster),
// and then every task of every "node" is visible here, so a task belongs to this node only
// when its own environment says so. Steps that are hangscan's own (the agent step, and the
// step the front end runs in when started inside the allocation) are left out by step id.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "capture/capture.h"
#include "hangscan/model.h"
#include "hangscan/result.h"

namespace hangscan {

// How a process's environment relates to a Slurm job on a node.
enum class SlurmTaskMatch {
  other,      // another job, another node, or no Slurm environment
  task,       // a task of a job step on this node (ranks and their children)
  batch,      // the batch step (the job script and the srun it runs): no SLURM_STEP_ID
  excluded,   // a step of hangscan's own
};

SlurmTaskMatch classify_slurm_environment(const std::vector<std::string>& env, const std::string& job_id,
                                          const std::string& node,
                                          const std::vector<std::string>& exclude_steps);

struct SlurmTasks {
  std::vector<int> pids;          // tasks, ascending; the batch step only when no task exists
  std::size_t batch = 0;          // batch-step processes seen
  std::size_t excluded = 0;       // processes of hangscan's own steps
};

// Scans `proc_root` for the job's processes on `node`. Processes running the same executable
// as `self_pid` (other hangscan instances) are left out.
SlurmTasks find_slurm_tasks(const std::string& job_id, const std::string& node,
                            const std::vector<std::string>& exclude_steps,
                            const std::string& proc_root = "/proc", int self_pid = 0);

struct AgentOptions {
  std::string job_id;                      // --slurm-job; "" in --match mode
  std::string node;                        // the node name to report (validated)
  std::vector<std::string> exclude_steps;  // --exclude-step, plus the agent's own step
  std::string match;                       // --match REGEX (pdsh mode)
  CaptureOptions capture;
  std::chrono::milliseconds timeout{25000};   // for the whole node
};

// The node name to use: --node, else SLURMD_NODENAME (Slurm mode), else the host name.
std::string default_agent_node(const std::string& explicit_node, bool slurm_mode);

// Finds and captures. Errors only for bad options (Errc::usage); a node with no process of
// the job is a snapshot with a warning, so the front end can report the ranks as missing.
Result<JobSnapshot> run_agent(const AgentOptions& options);

}  // namespace hangscan
