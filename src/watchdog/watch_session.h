// run_watch_session(): `hangscan watch` on this machine: the window, or the watchdog (--stall)
// with its bundles, or a node's part of `watch --slurm-job` (node-local).
//
// Why in the library: the CLI maps flags to a request and prints what the hooks are told; the
// loop (recorder with its ptrace fallback, steps, the one Watchdog, the capture and its
// bundle) is the same for every front end and is tested through it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "group/analysis.h"
#include "hangscan/model.h"
#include "hangscan/result.h"
#include "logs/job_analysis.h"
#include "watch/watch_report.h"
#include "watch/watcher.h"

namespace hangscan {

struct WatchSessionRequest {
  WatchOptions watch;       // what to watch and how (rate, wait threshold)
  bool ptrace = false;      // the ptrace sampler even where eBPF works
  double seconds = 10;      // the window (without --stall, or node-local)
  double stall = 0;         // > 0: the watchdog
  std::string log_file;     // --log: also a stall when it was not written for `stall` s
  std::string output_dir;   // where bundles go
  bool once = false;        // end after the first bundle
  bool node_local = false;  // one node's part of --slurm-job: a stall ends the window, no bundle
  GroupOptions group;       // how the bundle's capture is grouped
  JobLogs logs;             // --logs: joined with the bundle's capture (each rank's last line)
};

// What the session tells its caller while it runs (each may be empty).
struct WatchSessionHooks {
  std::function<bool()> stop_pending;                // true: end the window now (SIGINT)
  std::function<void(const Error&)> warning;         // the fallback, a failed step
  std::function<void(std::size_t, bool)> recording;  // processes, ptrace fallback: recording began
  // The bundle's logs that could not be read (before it is written); after it (--gcore: cores).
  std::function<void(const std::vector<LogProblem>&)> unread_logs;
  std::function<void(const JobSnapshot&, const Analysis&, const std::string&)> after_bundle;
  std::function<void(const std::string&, const std::string&)> stalled;  // reason, bundle dir
};

struct WatchSessionResult {
  WatchReport report;      // the window's (empty after --once)
  bool fallback = false;   // the ptrace sampler recorded it
  std::string node_stall;  // node-local --stall: why this node's ranks stopped ("" if not)
  std::int64_t newest_progress_ns = 0;  // CLOCK_MONOTONIC; 0: none known
  bool ended_once = false;              // --once: a bundle was written
};

// The recorder (eBPF, else the ptrace fallback, said through `warning`) watches until the
// window ends, a stop, or (--stall) for ever, writing a bundle per stall. Errors: nothing to
// watch, a recorder that would not start, a bundle that could not be written.
// The report carries the start's diagnostics.
Result<WatchSessionResult> run_watch_session(const WatchSessionRequest& request,
                                             const WatchSessionHooks& hooks);

// A node's document for the front end (watch --node-local): the window's JSON stamped with the
// node, its clock and this build's version (cluster_watch.h), and with `stall_mode` what the
// node's watchdog said.
nlohmann::json node_watch_document(const WatchSessionResult& result, const std::string& node,
                                   bool stall_mode);

}  // namespace hangscan
