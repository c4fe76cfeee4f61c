#include "discovery/slurm_tasks.h"

#include <unistd.h>

#include <fmt/core.h>

#include <algorithm>

#include "proc/proc_files.h"
#include "proc/process_tree.h"
#include "proc/rank_info.h"

namespace hangscan {

namespace {

std::string exe_of(const std::string& proc_root, int pid) {
  return read_link(fmt::format("{}/{}/exe", proc_root, pid)).value_or("");
}

bool job_matches(const std::vector<std::string>& env, const std::string& job_id) {
  auto jid = env_value(env, "SLURM_JOB_ID");
  if (!jid) jid = env_value(env, "SLURM_JOBID");
  if (jid && *jid == job_id) return true;
  // An array task is named "ARRAYJOB_TASK" by users; its SLURM_JOB_ID is a number of its own.
  auto array = env_value(env, "SLURM_ARRAY_JOB_ID");
  auto task = env_value(env, "SLURM_ARRAY_TASK_ID");
  return array && task && *array + "_" + *task == job_id;
}

}  // namespace

SlurmTaskMatch classify_slurm_environment(const std::vector<std::string>& env,
                                          const std::string& job_id, const std::string& node,
                                          const std::vector<std::string>& exclude_steps) {
  if (!job_matches(env, job_id)) return SlurmTaskMatch::other;
  auto nodename = env_value(env, "SLURMD_NODENAME");
  if (!nodename || *nodename != node) return SlurmTaskMatch::other;
  auto step = env_value(env, "SLURM_STEP_ID");
  if (!step) step = env_value(env, "SLURM_STEPID");
  if (!step) return SlurmTaskMatch::batch;
  if (std::find(exclude_steps.begin(), exclude_steps.end(), *step) != exclude_steps.end()) {
    return SlurmTaskMatch::excluded;
  }
  return SlurmTaskMatch::task;
}

SlurmTasks find_slurm_tasks(const std::string& job_id, const std::string& node,
                            const std::vector<std::string>& exclude_steps,
                            const std::string& proc_root, int self_pid) {
  const int self = self_pid != 0 ? self_pid : static_cast<int>(::getpid());
  const std::string self_exe = exe_of(proc_root, self);
  SlurmTasks out;
  std::vector<int> batch;
  ProcessTree tree = ProcessTree::scan(proc_root);
  for (const auto& e : tree.entries()) {
    if (e.kernel_thread || e.pid == self) continue;
    auto text = read_text_file(fmt::format("{}/{}/environ", proc_root, e.pid), 1 << 20);
    if (!text) continue;
    auto match = classify_slurm_environment(split_nul(*text), job_id, node, exclude_steps);
    if (match == SlurmTaskMatch::other) continue;
    if (match != SlurmTaskMatch::excluded && !self_exe.empty() &&
        exe_of(proc_root, e.pid) == self_exe) {
      match =
          SlurmTaskMatch::excluded;  // another hangscan (an agent of an earlier run, a front end)
    }
    switch (match) {
      case SlurmTaskMatch::task:
        out.pids.push_back(e.pid);
        break;
      case SlurmTaskMatch::batch:
        batch.push_back(e.pid);
        break;
      case SlurmTaskMatch::excluded:
        ++out.excluded;
        break;
      case SlurmTaskMatch::other:
        break;
    }
  }
  out.batch = batch.size();
  // The job script and its srun are launchers, and they carry SLURM_PROCID=0 like rank 0; they
  // are the workload only when the script runs it directly (no step on this node).
  if (out.pids.empty()) out.pids = std::move(batch);
  std::sort(out.pids.begin(), out.pids.end());
  return out;
}

}  // namespace hangscan
