#include "fanout/agent.h"

#include <unistd.h>

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>

#include "corewrite/core_writer.h"
#include "corewrite/member_core.h"
#include "discovery/discovery.h"
#include "fanout/coredumps.h"
#include "fanout/hostlist.h"
#include "fanout/slurm.h"
#include "jobs/job_loop.h"
#include "proc/container_info.h"
#include "proc/proc_files.h"
#include "proc/rank_info.h"
#include "util/deadline.h"
#include "util/diagnostic.h"
#include "util/hints.h"

namespace hangscan {

namespace {

std::string exe_of(const std::string& proc_root, int pid) {
  return read_link(fmt::format("{}/{}/exe", proc_root, pid)).value_or("");
}

// pgrep -f's classic trap, at fan-out scale: the front end, pdsh, ssh and the remote shell all
// carry the agent's command line, regex included, so --match would find them too.
bool carries_agent_command(const std::string& proc_root, int pid, const std::string& self_exe) {
  if (!self_exe.empty() && exe_of(proc_root, pid) == self_exe) return true;
  auto text = read_text_file(fmt::format("{}/{}/cmdline", proc_root, pid), 1 << 20);
  if (!text) return false;
  std::string joined;
  for (const auto& a : split_nul(*text)) joined += a + " ";
  return joined.find(" agent --match ") != std::string::npos ||
         joined.find("'agent' '--match'") != std::string::npos;
}

// Whether `pid` runs in the Kubernetes pod `uid` (its cgroup path names the pod).
bool in_pod(const std::string& proc_root, int pid, const std::string& uid) {
  auto text = read_text_file(fmt::format("{}/{}/cgroup", proc_root, pid), 1 << 16);
  auto c = text ? container_from_proc_cgroup(*text) : std::nullopt;
  return c && c->pod_uid == uid;
}

}  // namespace

std::string default_agent_node(const std::string& explicit_node, bool slurm_mode) {
  if (!explicit_node.empty()) return explicit_node;
  if (slurm_mode) {
    if (const char* n = std::getenv("SLURMD_NODENAME"); n != nullptr && *n != '\0') return n;
  }
  std::string h = local_host_name();
  return h.substr(0, h.find('.'));
}

namespace {

Status validate_agent_options(const AgentOptions& o) {
  if (auto st = validate_host_name(o.node); !st) return st.error();
  if (!o.job_id.empty()) {
    if (auto st = validate_job_id(o.job_id); !st) return st.error();
  } else if (o.match.empty()) {
    return Error(Errc::usage, "the agent needs --slurm-job ID or --match REGEX");
  }
  return Ok{};
}

}  // namespace

Result<std::vector<DiscoveredProcess>> discover_job_processes(
    const AgentOptions& o, std::vector<Diagnostic>& diagnostics) {
  if (auto st = validate_agent_options(o); !st) return st.error();
  const bool slurm_mode = !o.job_id.empty();
  DiscoveryOptions dopt;
  if (slurm_mode) {
    std::vector<std::string> exclude = o.exclude_steps;
    SlurmContext own = slurm_context_from_environment();
    if (own.job_id == o.job_id && !own.step_id.empty()) exclude.push_back(own.step_id);
    SlurmTasks tasks = find_slurm_tasks(o.job_id, o.node, exclude);
    if (tasks.pids.empty()) {
      diagnostics.push_back(make_diagnostic(
          Diagnostic::Severity::warning,
          fmt::format("no process of Slurm job {} runs on node {}", o.job_id, o.node),
          "the ranks of this node may have exited; 'scontrol listpids JOB NODE' lists what Slurm "
          "tracks"));
      return std::vector<DiscoveredProcess>{};
    }
    dopt.pids = std::move(tasks.pids);
  } else {
    dopt.match = o.match;
  }
  std::vector<Diagnostic> found;
  auto procs = discover(dopt, &found);
  for (auto& d : found) {
    // Processes that exited between the scan and discovery are not worth a warning.
    if (d.severity != Diagnostic::Severity::info) diagnostics.push_back(std::move(d));
  }
  if (!procs) {
    if (procs.error().code == Errc::usage) return procs.error();
    diagnostics.push_back(make_diagnostic(
        Diagnostic::Severity::warning, fmt::format("on node {}: {}", o.node, procs.error().what()),
        procs.error().hint));
    return std::vector<DiscoveredProcess>{};
  }
  if (!slurm_mode) {
    const std::string self_exe = exe_of("/proc", static_cast<int>(::getpid()));
    std::erase_if(*procs, [&](const DiscoveredProcess& dp) {
      return carries_agent_command("/proc", dp.pid, self_exe) ||
             (!o.pod_uid.empty() && !in_pod("/proc", dp.pid, o.pod_uid));
    });
  }
  return std::move(*procs);
}

Result<JobSnapshot> run_agent(const AgentOptions& o) {
  JobOptions run;
  run.capture = o.capture;
  run.deadline = Deadline::after(o.timeout);
  run.host = o.node;
  run.explain_deaths = true;
  run.slurm_job_id = o.job_id;
  run.slurm_job_start = o.job_start;
  run.resolve_waits = true;
  run.remember_since = true;
  start_quiet_session(run.capture);  // when quiet: loads while the processes are found
  std::vector<Diagnostic> found;
  auto procs = discover_job_processes(o, found);
  if (!procs) return procs.error();
  std::vector<JobMember> members(procs->size());
  for (std::size_t i = 0; i < procs->size(); ++i) members[i].process = std::move((*procs)[i]);
  SymbolCache symbols;
  JobSnapshot job = run_job(members, run, symbols, std::move(found));
  locate_coredumps(job, run.deadline);
  job.job_id = o.job_id;
  return job;
}

std::optional<Error> refuse_core_request(const CoreRequest& r,
                                         const std::vector<DiscoveredProcess>& job_processes,
                                         const AgentOptions& o, const std::string& proc_root) {
  auto it = std::find_if(job_processes.begin(), job_processes.end(),
                         [&](const DiscoveredProcess& dp) { return dp.pid == r.pid; });
  if (it == job_processes.end()) {
    auto stat_text = read_text_file(fmt::format("{}/{}/stat", proc_root, r.pid), 4096);
    auto stat = stat_text ? parse_stat(*stat_text) : std::nullopt;
    if (!stat || stat->state == 'Z' || stat->state == 'X') {
      return Error(
          Errc::no_such_process,
          fmt::format("pid {} {}: it exited after the capture", r.pid,
                      stat ? "is a zombie" : "is gone"),
          0, "the report above shows where it was; its rank may have crashed or the job ended");
    }
    std::string owner = o.job_id.empty()
                            ? fmt::format("a process matching --match '{}' on {}", o.match, o.node)
                            : fmt::format("a process of Slurm job {} on node {}", o.job_id, o.node);
    return Error(
        Errc::not_found,
        fmt::format("pid {} is no longer {}: not dumped (the pid was reused?)", r.pid, owner), 0,
        hints::fresh_report());
  }
  if (auto reused = pid_reused(r.pid, r.start_ticks, proc_root)) return reused;
  if (r.rank) {
    ProcessSnapshot now;
    apply_rank_info(now, it->environment.empty() ? live_environment(it->pid) : it->environment,
                    &*it);
    if (now.rank && *now.rank != *r.rank) {
      return Error(
          Errc::not_found,
          fmt::format("pid {} is rank {} now, not rank {}: not dumped (the pid was reused?)", r.pid,
                      *now.rank, *r.rank),
          0, hints::fresh_report());
    }
  }
  return std::nullopt;
}

Result<std::vector<CoreOutcome>> run_core_agent(const AgentOptions& o,
                                                const std::vector<CoreRequest>& requests,
                                                const CoreWriterFn& write) {
  if (auto st = validate_agent_options(o); !st) return st.error();
  Deadline deadline = Deadline::after(o.timeout);
  std::vector<CoreOutcome> out;
  std::vector<const CoreRequest*> mine;
  for (const auto& r : requests) {
    if (r.node == o.node) mine.push_back(&r);
  }
  if (mine.empty()) return out;
  std::vector<Diagnostic> diagnostics;
  auto procs = discover_job_processes(o, diagnostics);
  if (!procs) return procs.error();
  for (const CoreRequest* r : mine) {
    CoreOutcome c;
    c.node = r->node;
    c.pid = r->pid;
    c.rank = r->rank;
    if (deadline.expired()) {
      c.error = fmt::format("no core of pid {}: the agent's deadline passed", r->pid);
      c.hint = hints::raise_timeout();
    } else if (auto why = refuse_core_request(*r, *procs, o)) {
      c.error = why->what();
      c.hint = why->hint;
    } else {
      c = write(*r, deadline);
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace hangscan
