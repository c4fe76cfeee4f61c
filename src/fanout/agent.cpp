#include "fanout/agent.h"

#include <unistd.h>

#include <fmt/core.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "fanout/hostlist.h"
#include "fanout/slurm.h"
#include "proc/discovery.h"
#include "proc/proc_files.h"
#include "proc/process_tree.h"
#include "proc/rank_info.h"
#include "target/live_target.h"
#include "util/deadline.h"

namespace hangscan {

namespace {

std::string exe_of(const std::string& proc_root, int pid) {
  char buf[PATH_MAX];
  std::string link = fmt::format("{}/{}/exe", proc_root, pid);
  ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<std::size_t>(n));
}

Diagnostic make_diagnostic(Diagnostic::Severity sev, std::string message, std::string hint = {}) {
  Diagnostic d;
  d.severity = sev;
  d.message = std::move(message);
  d.hint = std::move(hint);
  return d;
}

// Captures each process until the deadline; the rest are reported as not captured.
void capture_processes(const std::vector<DiscoveredProcess>& procs, const CaptureOptions& base,
                       const Deadline& deadline, JobSnapshot& job) {
  SymbolCache symbols;
  for (const auto& dp : procs) {
    if (deadline.expired()) {
      job.processes.push_back(unopened_snapshot(
          dp, Error(Errc::timeout, fmt::format("pid {} not captured: the agent's deadline passed", dp.pid), 0,
                    "raise --timeout")));
      continue;
    }
    auto target = open_live_target(dp.pid);
    if (!target) {
      job.processes.push_back(unopened_snapshot(dp, target.error()));
      continue;
    }
    CaptureOptions copt = base;
    copt.freeze_timeout = std::min(copt.freeze_timeout, std::max(deadline.remaining(), std::chrono::milliseconds(1)));
    ProcessSnapshot snap = capture_process(**target, copt, symbols);
    auto env = dp.environment.empty() ? live_environment(dp.pid) : dp.environment;
    apply_rank_info(snap, env, &dp);
    job.processes.push_back(std::move(snap));
  }
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

// pgrep -f's classic trap, at fan-out scale: the front end, pdsh, ssh and the remote shell all
// carry the agent's command line, regex included, so --match would find them too.
bool carries_agent_command(const std::string& proc_root, int pid, const std::string& self_exe) {
  if (!self_exe.empty() && exe_of(proc_root, pid) == self_exe) return true;
  auto text = read_text_file(fmt::format("{}/{}/cmdline", proc_root, pid), 1 << 20);
  if (!text) return false;
  std::string joined;
  for (const auto& a : split_nul(*text)) joined += a + " ";
  return joined.find(" agent --match ") != std::string::npos || joined.find("'agent' '--match'") != std::string::npos;
}

}  // namespace

SlurmTaskMatch classify_slurm_environment(const std::vector<std::string>& env, const std::string& job_id,
                                          const std::string& node,
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
                            const std::vector<std::string>& exclude_steps, const std::string& proc_root,
                            int self_pid) {
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
    if (match != SlurmTaskMatch::excluded && !self_exe.empty() && exe_of(proc_root, e.pid) == self_exe) {
      match = SlurmTaskMatch::excluded;   // another hangscan (an agent of an earlier run, a front end)
    }
    switch (match) {
      case SlurmTaskMatch::task: out.pids.push_back(e.pid); break;
      case SlurmTaskMatch::batch: batch.push_back(e.pid); break;
      case SlurmTaskMatch::excluded: ++out.excluded; break;
      case SlurmTaskMatch::other: break;
    }
  }
  out.batch = batch.size();
  // The job script and its srun are launchers, and they carry SLURM_PROCID=0 like rank 0; they
  // are the workload only when the script runs it directly (no step on this node).
  if (out.pids.empty()) out.pids = std::move(batch);
  std::sort(out.pids.begin(), out.pids.end());
  return out;
}

std::string default_agent_node(const std::string& explicit_node, bool slurm_mode) {
  if (!explicit_node.empty()) return explicit_node;
  if (slurm_mode) {
    if (const char* n = std::getenv("SLURMD_NODENAME"); n != nullptr && *n != '\0') return n;
  }
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "localhost";
  std::string h(host);
  return h.substr(0, h.find('.'));
}

Result<JobSnapshot> run_agent(const AgentOptions& o) {
  if (auto st = validate_host_name(o.node); !st) return st.error();
  const bool slurm_mode = !o.job_id.empty();
  if (slurm_mode) {
    if (auto st = validate_job_id(o.job_id); !st) return st.error();
  } else if (o.match.empty()) {
    return Error(Errc::usage, "the agent needs --slurm-job ID or --match REGEX");
  }
  Deadline deadline = Deadline::after(o.timeout);
  JobSnapshot job;
  job.job_id = o.job_id;

  DiscoveryOptions dopt;
  if (slurm_mode) {
    std::vector<std::string> exclude = o.exclude_steps;
    SlurmContext own = slurm_context_from_environment();
    if (own.job_id == o.job_id && !own.step_id.empty()) exclude.push_back(own.step_id);
    SlurmTasks tasks = find_slurm_tasks(o.job_id, o.node, exclude);
    if (tasks.pids.empty()) {
      job.diagnostics.push_back(make_diagnostic(
          Diagnostic::Severity::warning, fmt::format("no process of Slurm job {} runs on node {}", o.job_id, o.node),
          "the ranks of this node may have exited; 'scontrol listpids JOB NODE' lists what Slurm tracks"));
      return job;
    }
    dopt.pids = std::move(tasks.pids);
  } else {
    dopt.match = o.match;
  }
  std::vector<Diagnostic> diags;
  auto procs = discover(dopt, &diags);
  for (auto& d : diags) {
    // Processes that exited between the scan and discovery are not worth a warning.
    if (d.severity != Diagnostic::Severity::info) job.diagnostics.push_back(std::move(d));
  }
  if (!procs) {
    if (procs.error().code == Errc::usage) return procs.error();
    job.diagnostics.push_back(make_diagnostic(Diagnostic::Severity::warning,
                                              fmt::format("on node {}: {}", o.node, procs.error().what()),
                                              procs.error().hint));
    return job;
  }
  if (!slurm_mode) {
    const std::string self_exe = exe_of("/proc", static_cast<int>(::getpid()));
    std::erase_if(*procs, [&](const DiscoveredProcess& dp) { return carries_agent_command("/proc", dp.pid, self_exe); });
  }
  capture_processes(*procs, o.capture, deadline, job);
  for (auto& p : job.processes) {
    p.host = o.node;
    for (auto& d : p.diagnostics) d.host = o.node;
  }
  for (auto& d : job.diagnostics) d.host = o.node;
  return job;
}

}  // namespace hangscan
