// run_job(): the one loop that turns a set of targets into a JobSnapshot.
//
// Why: `dump`, the node agent and `core` all do the same thing to each target: open it,
// capture it, read its environment, give it its rank, explain its crash, and put it in one
// job with the node's deaths and host name. Written once here, the rule "a failure in one
// target is that target's diagnostic" is kept in one place: nothing a target does (a refused
// open, bad data, an exception from a library) crosses this loop, the other targets are still
// captured. Opening is done here and only here (or by a caller that already opened the target
// to check it, which hands the open target in), so one pid is opened once per capture.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capture/capture.h"
#include "discovery/discovery.h"
#include "hangscan/model.h"
#include "jobs/phase_clock.h"
#include "target/core_target.h"
#include "target/target.h"
#include "unwind/symbol_cache.h"
#include "util/deadline.h"

namespace hangscan {

class LiveRunShared;  // target/live_target.h

// One target of a job before it is captured: a live process or a core file.
struct JobMember {
  DiscoveredProcess process;       // live: as discovery found it (role, rank, environment)
  std::string core_file;           // a core: its path (then `process` is not used)
  std::unique_ptr<Target> opened;  // live: already open (an explicit --pid's check); used once
  bool is_core() const { return !core_file.empty(); }
};

struct JobOptions {
  CaptureOptions capture;
  CoreOpenOptions core;                   // how core members are opened
  Deadline deadline = Deadline::never();  // members not reached by then are snapshots saying so
  std::string host;                       // node name for every snapshot and diagnostic ("": local)
  bool explain_deaths = false;            // live jobs: the node's record of processes that died
  std::string slurm_job_id;               // a Slurm job's agent: its cgroups and start link deaths
  std::optional<double> slurm_job_start;  // the Slurm job's StartTime (Unix seconds)
  bool resolve_waits = false;  // live jobs: who waits on whom through sockets (proc/socket_waits.h)
  // live jobs: carry since-when from earlier dumps (proc/since_state.h), leave this one's
  bool remember_since = false;
  int samples = 1;              // snapshots of every member (progress when > 1)
  double interval_s = 1.0;      // between samples
  PhaseClock* clock = nullptr;  // lapped between the steps when given (core -v)
  // The run's live-target helpers (target/live_target.h), also for members opened before
  // run_job; null: run_job makes them.
  std::shared_ptr<LiveRunShared> live;
};

// Captures every member (`samples` times), then enriches and merges: progress over the
// samples, the node's deaths, `found` (diagnostics of discovery) in job.diagnostics, the host
// on everything. Never throws. Live members that fail are snapshots with their error
// diagnostic (the rank stays in the report); core files that fail are job diagnostics.
JobSnapshot run_job(std::vector<JobMember>& members, const JobOptions& options,
                    SymbolCache& symbols, std::vector<Diagnostic> found = {});

// "core.rank3", "rank-12.core", "core_rank_0.zst": a rank in a core file's name, for cores
// whose environment does not name one.
std::optional<int> rank_from_file_name(const std::string& path);

}  // namespace hangscan
