#include "jobs/job_loop.h"

#include <unistd.h>

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "capture/bpf_fd_holders.h"
#include "crash/crash_explainer.h"
#include "discovery/environ_memory.h"
#include "group/progress.h"
#include "group/roles.h"
#include "jobs/vanished_workers.h"
#include "proc/blocking_waits.h"
#include "proc/container_info.h"
#include "proc/deaths.h"
#include "proc/gpu_memory.h"
#include "proc/since_state.h"
#include "proc/socket_waits.h"
#include "target/live_target.h"
#include "util/contain.h"
#include "util/diagnostic.h"
#include "util/hints.h"
#include "util/parse_number.h"
#include "util/pattern.h"

namespace hangscan {

namespace {

void lap(const JobOptions& o, PhaseClock::Phase phase) {
  if (o.clock != nullptr) o.clock->lap(phase);
}

// Starts the node-wide fd scan once a released process waits on a pipe whose other end it holds
// itself (proc/node_fds.h): the scan then overlaps the unwinding of this process and the
// capture of the others. Other waits that need the node (rare) scan it when resolved.
void start_scan_on_pipe_waits(CaptureOptions& copt, NodeFdScan* scan) {
  if (scan == nullptr) return;
  copt.released = [scan](int pid, const std::vector<const ThreadSnapshot*>& threads) {
    if (!scan->started() && waits_on_own_pipe(pid, threads)) scan->start();
  };
}

// One live process: open (unless open already), capture, rank from the environment it sees now.
// `scan` (may be null): the sample's node-wide fd scan, started here when a wait needs it.
ProcessSnapshot capture_live(JobMember& m, const JobOptions& o, SymbolCache& symbols,
                             NodeFdScan* scan, const std::shared_ptr<LiveRunShared>& live) {
  const DiscoveredProcess& dp = m.process;
  if (o.deadline.expired()) {
    return unopened_snapshot(
        dp, Error(Errc::timeout,
                  fmt::format("pid {} not captured: the agent's deadline passed", dp.pid), 0,
                  hints::raise_timeout()));
  }
  ProcessSnapshot snap;
  auto failure = failure_of([&] {
    std::unique_ptr<Target> target = std::move(m.opened);
    if (!target) {
      auto opened = open_live_target(dp.pid, o.capture.nonblocking, live);
      if (!opened) {
        snap = unopened_snapshot(dp, opened.error());
        return;
      }
      target = std::move(*opened);
    }
    CaptureOptions copt = o.capture;
    copt.freeze_timeout = std::min(copt.freeze_timeout,
                                   std::max(o.deadline.remaining(), std::chrono::milliseconds(1)));
    start_scan_on_pipe_waits(copt, scan);
    snap = capture_process(*target, copt, symbols);
    apply_rank_info(snap, dp.environment.empty() ? read_environment(*target) : dp.environment, &dp);
    if (auto c = read_container_info(dp.pid)) snap.container = std::move(*c);
  });
  if (failure) {
    snap = unopened_snapshot(
        dp,
        Error(failure->code(), fmt::format("pid {}: capture failed: {}", dp.pid, failure->message),
              0, failure->hint()));
  }
  return snap;
}

// One core: open, capture, rank (environment, else the file name), explain the crash.
void capture_core(const JobMember& m, const JobOptions& o, SymbolCache& symbols, JobSnapshot& job) {
  auto failure = failure_of([&] {
    auto target = open_core_target(m.core_file, o.core);
    lap(o, PhaseClock::open);
    if (!target) {
      job.diagnostics.push_back(error_diagnostic(target.error()));
      return;
    }
    ProcessSnapshot snap = capture_process(**target, o.capture, symbols);
    lap(o, PhaseClock::capture);
    apply_rank_info(snap, read_environment(**target));
    if (!snap.rank) {
      if (auto r = rank_from_file_name(m.core_file)) {
        snap.rank = r;
        snap.role = "rank";
      }
    }
    lap(o, PhaseClock::environ);
    if (snap.core) snap.core->annotations = explain_crash(**target, snap);
    if (snap.world_size) {
      job.expected_world_size = std::max(job.expected_world_size.value_or(0), *snap.world_size);
    }
    job.processes.push_back(std::move(snap));
    target->reset();  // the core's mapping and files are released before the next one
    lap(o, PhaseClock::crash);
  });
  if (failure) {
    job.diagnostics.push_back(error_diagnostic(
        Error(failure->code(), fmt::format("core {}: {}", m.core_file, failure->message), 0,
              failure->hint())));
  }
}

JobSnapshot capture_once(std::vector<JobMember>& members, const JobOptions& o, SymbolCache& symbols,
                         NodeFdScan* scan, const std::shared_ptr<LiveRunShared>& live) {
  JobSnapshot job;
  for (auto& m : members) {
    if (m.is_core()) {
      capture_core(m, o, symbols, job);
    } else {
      job.processes.push_back(capture_live(m, o, symbols, scan, live));
    }
  }
  return job;
}

// GPU memory of this node's live processes (NVML, when the node has it: nothing otherwise).
void add_gpu_memory(JobSnapshot& job) {
  auto gpu = gpu_memory_by_pid();
  if (!gpu) return;
  for (ProcessSnapshot& p : job.processes) {
    auto it = gpu->find(p.pid);
    if (!p.core && p.memory && it != gpu->end()) p.memory->gpu_bytes = it->second;
  }
}

}  // namespace

JobSnapshot run_job(std::vector<JobMember>& members, const JobOptions& o, SymbolCache& symbols,
                    std::vector<Diagnostic> found) {
  const int count = std::max(1, o.samples);
  std::vector<JobSnapshot> samples;
  // The waits are resolved on the last sample: the node's fd tables are read during it.
  std::unique_ptr<NodeFdScan> scan;
  const auto live = o.live ? o.live : std::make_shared<LiveRunShared>();
  for (int i = 0; i < count; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o.interval_s));
    // Through BPF when the run may use it (one iterator pass instead of a readlink per fd).
    if (o.resolve_waits) scan = std::make_unique<NodeFdScan>(node_fd_scanner(o.capture.quiet));
    samples.push_back(capture_once(members, o, symbols, scan.get(), live));
  }
  // Progress reads every sample, the last included: computed before the last is moved out.
  std::vector<ProcessProgress> progress;
  if (count > 1) progress = compute_progress(samples, o.interval_s, sysconf(_SC_CLK_TCK));
  JobSnapshot job = std::move(samples.back());
  if (count > 1) apply_progress(job, progress);
  drop_vanished_workers(job);
  for (auto& d : found) job.diagnostics.push_back(std::move(d));
  if (!o.host.empty()) {
    for (auto& p : job.processes) {
      p.host = o.host;
      for (auto& d : p.diagnostics) d.host = o.host;
    }
    for (auto& d : job.diagnostics) d.host = o.host;
  }
  if (o.explain_deaths) {
    explain_deaths(job, o.host, {o.slurm_job_id, o.slurm_job_start});
    add_gpu_memory(job);
  }
  if (o.remember_since) carry_since_state(job, count);
  if (o.resolve_waits) {
    resolve_socket_waits(job, o.host, scan.get());
    resolve_blocking_waits(job, o.host);
  }
  mark_started_workers(job);
  mark_idle_workers(job);
  return job;
}

std::optional<int> rank_from_file_name(const std::string& path) {
  auto slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  static const Pattern kRank(R"((?:^|[^a-z])rank[-_.]?([0-9]{1,7})(?:[^0-9]|$))",
                             {Pattern::Syntax::ecmascript, true});
  if (auto m = kRank.search_groups(base)) return parse_int<int>((*m)[1]);
  return std::nullopt;
}

}  // namespace hangscan
