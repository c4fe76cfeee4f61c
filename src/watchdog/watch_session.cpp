#include "watchdog/watch_session.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include "discovery/discovery.h"
#include "jobs/job_loop.h"
#include "util/diagnostic.h"
#include "watch/cluster_watch.h"
#include "watch/ptrace_recorder.h"
#include "watch/watch_format.h"
#include "watchdog/watchdog.h"

namespace hangscan {

namespace {

// CLOCK_MONOTONIC ns of the newest progress of any of `ranks`; 0 when none is known.
std::int64_t newest_progress_ns(const Watcher& w, const std::vector<int>& ranks) {
  std::int64_t newest = 0;
  for (int pid : ranks) {
    auto it = w.last_progress().find(pid);
    if (it != w.last_progress().end()) newest = std::max(newest, it->second);
  }
  return newest;
}

double now_s() { return static_cast<double>(monotonic_ns()) / 1e9; }

// The ranks' progress as the watchdog judges it (seconds on CLOCK_MONOTONIC).
ProgressView progress_view(const Watcher& w, double stall_s) {
  const std::vector<int> ranks = w.rank_pids();
  const std::int64_t newest = newest_progress_ns(w, ranks);
  if (ranks.empty() || newest == 0) return {};
  double newest_s = static_cast<double>(newest) / 1e9;
  double idle = now_s() - newest_s;
  return {idle >= stall_s, idle, newest_s};
}

// The recorder: eBPF unless asked for ptrace or eBPF will not start (said through `warning`
// and, for the report, in `diags`).
std::unique_ptr<Recorder> start_recorder(const WatchSessionRequest& r, RecorderOptions& options,
                                         const WatchSessionHooks& hooks,
                                         std::vector<Diagnostic>& diags) {
  if (!r.ptrace) {
    auto rec = Recorder::start(options);
    if (rec) return std::move(*rec);
    Error e = rec.error();
    e.message += fmt::format(
        "; falling back to ptrace samples at {} Hz (each stops the process 1-5 ms: 0.2-1% of "
        "its time, counted in the report; no waits, signals or exits)",
        kPtraceFallbackHz);
    if (hooks.warning) hooks.warning(e);
    diags.push_back(make_diagnostic(Diagnostic::Severity::warning, e.what(), e.hint));
  }
  options.sample_hz = kPtraceFallbackHz;
  return nullptr;
}

// The capture `dump` takes and the recorder's report, into OUTPUT_DIR/stall-TIME/.
Result<std::string> write_bundle(Watcher& w, const WatchSessionRequest& r,
                                 const WatchSessionHooks& hooks, const std::string& reason) {
  // The recorder's view first: the capture's ptrace stops restart the threads' system calls.
  WatchReport rec = w.report();
  std::vector<DiscoveredProcess> procs;
  DiscoveryOptions dopt;
  dopt.pids = w.pids();
  std::vector<Diagnostic> diags;
  if (!dopt.pids.empty()) {
    auto found = discover(dopt, &diags);
    if (found) procs = std::move(*found);
  }
  JobOptions run;
  run.capture.merge_native = true;
  run.explain_deaths = true;
  run.resolve_waits = true;
  std::vector<JobMember> members(procs.size());
  for (std::size_t i = 0; i < procs.size(); ++i) members[i].process = std::move(procs[i]);
  SymbolCache symbols;
  JobSnapshot job = run_job(members, run, symbols, std::move(diags));
  Analysis analysis = analyze(job, r.group);
  auto unread = join_job_logs(job, analysis, r.logs);
  if (!unread.empty() && hooks.unread_logs) hooks.unread_logs(unread);
  auto dir =
      write_stall_bundle(r.output_dir, reason, job, analysis, {watch_json(rec), watch_text(rec)});
  // After the reports: a core that fails leaves them whole.
  if (dir && hooks.after_bundle) hooks.after_bundle(job, analysis, *dir);
  return dir;
}

}  // namespace

Result<WatchSessionResult> run_watch_session(const WatchSessionRequest& r,
                                             const WatchSessionHooks& hooks) {
  WatchOptions wopt = r.watch;
  wopt.recorder.data_progress = r.stall > 0;
  WatchSessionResult out;
  std::vector<Diagnostic> diags;
  std::unique_ptr<Recorder> recorder = start_recorder(r, wopt.recorder, hooks, diags);
  out.fallback = recorder == nullptr;
  if (out.fallback) recorder = make_ptrace_recorder(wopt.recorder);
  auto watcher = Watcher::start(wopt, std::move(recorder), diags);
  if (!watcher) return std::move(watcher).error();
  Watcher& w = **watcher;
  if (hooks.recording) hooks.recording(w.pids().size(), out.fallback);
  const bool windowed = r.stall <= 0 || r.node_local;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(r.seconds);
  Watchdog dog(r.stall, r.log_file, "watched rank");
  while (!hooks.stop_pending || !hooks.stop_pending()) {
    if (windowed && std::chrono::steady_clock::now() >= deadline) break;
    if (auto st = w.step(std::chrono::milliseconds(200)); !st) {
      if (hooks.warning) hooks.warning(st.error());
      break;
    }
    if (windowed && w.all_gone()) break;
    if (r.stall <= 0) continue;
    ProgressView seen = progress_view(w, r.stall);
    if (dog.would_fire(seen)) {
      w.flush();  // the samples not yet finished may hold progress
      seen = progress_view(w, r.stall);
    }
    std::string reason = dog.judge(seen, now_s());
    if (reason.empty()) continue;
    if (r.node_local) {  // this node's ranks stopped: its report goes to the front end
      out.node_stall = reason;
      break;
    }
    auto dir = write_bundle(w, r, hooks, reason);
    if (!dir) return std::move(dir).error();
    if (hooks.stalled) hooks.stalled(reason, *dir);
    if (r.once) {
      out.ended_once = true;
      return out;
    }
  }
  out.report = w.report();
  if (out.fallback) out.report.recorder = "ptrace";
  for (auto& d : diags) out.report.diagnostics.push_back(std::move(d));
  out.newest_progress_ns = newest_progress_ns(w, w.rank_pids());
  return out;
}

nlohmann::json node_watch_document(const WatchSessionResult& result, const std::string& node,
                                   bool stall_mode) {
  nlohmann::json j = watch_json(result.report);
  const NodeClock clock = read_node_clock();
  if (stall_mode) {  // what the front end's watchdog judges across the nodes
    // The newest progress seen in this window (null: none; a rank's watch start is not).
    nlohmann::json last = nullptr;
    if (result.newest_progress_ns > result.report.start_ns)
      last = clock.boot_unix_s + static_cast<double>(result.newest_progress_ns) / 1e9;
    j["stall"] = {{"reason", result.node_stall.empty() ? nlohmann::json()
                                                       : nlohmann::json(result.node_stall)},
                  {"last_progress_unix_s", last}};
  }
  stamp_node_watch(j, node, result.report.start_ns, clock);
  return j;
}

}  // namespace hangscan
