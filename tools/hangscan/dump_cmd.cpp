// `hangscan dump`: capture live processes on this machine, group them, report.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>

#include <fmt/core.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "proc/deaths.h"
#include "capture/capture.h"
#include "fanout/agent.h"
#include "cli.h"
#include "group/progress.h"
#include "gcore_cmd.h"
#include "output.h"
#include "discovery/discovery.h"
#include "target/live_target.h"

namespace hangscan::cli {

namespace {

struct DumpOptions {
  std::vector<int> pids;
  bool subprocesses = false;
  std::string match;
  std::string unwinder = "libdw";
  bool native = false;
  bool locals = false;
  bool nonblocking = false;
  bool verbose = false;
  bool no_python = false;
  int timeout_ms = 3000;
  int samples = 1;
  double interval = 1.0;
  OutputOptions output;
  GcoreDumpOptions gcore;
};

Diagnostic error_diagnostic(const Error& e, int pid) {
  Diagnostic d;
  d.severity = Diagnostic::Severity::error;
  d.message = e.what();
  d.hint = e.hint;
  d.pid = pid;
  return d;
}

// One snapshot of every discovered process; a process that fails is its own diagnostic.
JobSnapshot capture_all(const std::vector<DiscoveredProcess>& procs, const CaptureOptions& copt,
                        SymbolCache& symbols, bool print_errors) {
  JobSnapshot job;
  job.processes = capture_discovered(procs, copt, Deadline::never(), symbols);
  if (print_errors) {
    for (const auto& snap : job.processes) {
      for (const auto& d : snap.diagnostics) {
        if (d.severity == Diagnostic::Severity::error) print_error(d.message, d.hint);
      }
    }
  }
  return job;
}

int run_dump(const DumpOptions& o) {
  if (o.pids.empty() && o.match.empty()) {
    print_error("dump needs --pid PID or --match REGEX", "see 'hangscan dump --help'");
    return kExitUsage;
  }
  if (auto g = group_options(o.output); !g) {
    print_error(g.error());
    return kExitUsage;
  }
  // A bad --gcore-max-size is a usage error before anything is stopped, as in the cluster modes.
  if (o.gcore.requested()) {
    if (auto st = check_gcore_options(o.gcore); !st) {
      print_error(st.error());
      return kExitUsage;
    }
  }
  CaptureOptions copt;
  copt.unwinder = o.unwinder == "libunwind" ? UnwinderKind::libunwind : UnwinderKind::libdw;
  copt.merge_native = o.native;
  copt.locals = o.locals;
  copt.nonblocking = o.nonblocking;
  copt.python = !o.no_python;
  copt.freeze_timeout = std::chrono::milliseconds(o.timeout_ms);
  std::vector<std::string> log;
  if (o.verbose) copt.log = &log;
  // Tests only (test_outcomes.py): hangscan stops itself while a target is frozen, so the test
  // can kill the target at exactly that moment.
  if (const char* hook = std::getenv("HANGSCAN_TEST_STOP_WHILE_FROZEN"); hook != nullptr && *hook == '1') {
    copt.while_frozen = [] { ::raise(SIGSTOP); };
  }

  // Explicit pids are checked first, so a bad one gets its own error line and hint (no such
  // process, zombie, kernel thread, already traced, permission) rather than vanishing.
  std::vector<int> good_pids;
  std::vector<Diagnostic> rejected;
  for (int pid : o.pids) {
    auto t = open_live_target(pid, o.nonblocking);
    if (t) {
      good_pids.push_back(pid);
      continue;
    }
    print_error(t.error());
    rejected.push_back(error_diagnostic(t.error(), pid));
  }
  if (good_pids.empty() && o.match.empty()) return kExitNothing;

  DiscoveryOptions dopt;
  dopt.pids = good_pids;
  dopt.subprocesses = o.subprocesses;
  dopt.match = o.match;
  std::vector<Diagnostic> discovery_diags;
  auto procs = discover(dopt, &discovery_diags);
  if (!procs) {
    print_error(procs.error());
    return procs.error().code == Errc::usage ? kExitUsage : kExitNothing;
  }
  if (o.verbose) {
    for (const auto& dp : *procs) {
      log.push_back(fmt::format("pid {}: {}{}", dp.pid, dp.role, dp.reason.empty() ? "" : " (" + dp.reason + ")"));
    }
  }

  SymbolCache symbols;
  std::vector<JobSnapshot> samples;
  int count = std::max(1, o.samples);
  for (int i = 0; i < count; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o.interval));
    samples.push_back(capture_all(*procs, copt, symbols, i == count - 1));
  }
  // Progress reads every sample, the last included: compute it before the last is moved out.
  std::vector<ProcessProgress> progress;
  if (count > 1) progress = compute_progress(samples, o.interval, sysconf(_SC_CLK_TCK));
  JobSnapshot job = std::move(samples.back());
  if (count > 1) apply_progress(job, progress);
  explain_deaths(job, "");
  for (auto& d : discovery_diags) job.diagnostics.push_back(std::move(d));
  for (auto& d : rejected) job.diagnostics.push_back(std::move(d));
  for (const auto& line : log) fmt::print(stderr, "hangscan: {}\n", line);

  if (!write_report(job, o.output)) return kExitNothing;
  int rc = exit_code_for(job);
  if (o.gcore.requested() && !write_job_cores(job, o.output, o.gcore)) rc = std::max(rc, kExitPartial);
  return rc;
}

}  // namespace

void add_dump_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<DumpOptions>();
  auto* sub = app.add_subcommand("dump", "Stacks of every thread of live processes, grouped by rank");
  sub->add_option("-p,--pid", opts->pids, "Process id (repeatable)")->check(process_id());
  sub->add_flag("--subprocesses", opts->subprocesses, "Also every descendant of each --pid");
  sub->add_option("--match", opts->match, "Processes whose command line matches REGEX (like pgrep -f)");
  sub->add_option("--unwinder", opts->unwinder, "Native unwinder")
      ->check(CLI::IsMember({"libdw", "libunwind"}))
      ->capture_default_str();
  sub->add_flag("--native", opts->native, "Interleave native and Python frames");
  sub->add_flag("--locals", opts->locals, "Show Python local variables");
  sub->add_flag("--nonblocking", opts->nonblocking,
                "Read Python frames without stopping the process (may be inconsistent)");
  sub->add_flag("--no-python", opts->no_python, "Do not read Python frames");
  sub->add_option("--samples", opts->samples, "Snapshots to take, to tell stuck from progressing")
      ->check(whole_number("a sample count", 1, 1000));
  sub->add_option("--interval", opts->interval, "Seconds between samples")
      ->check(finite_number("a number of seconds", 0.0, 3600.0));
  sub->add_option("--timeout-ms", opts->timeout_ms, "Deadline to stop every thread of a process")
      ->check(whole_number("a number of milliseconds", 1, 600000))
      ->capture_default_str();
  sub->add_flag("-v,--verbose", opts->verbose, "Say how processes and interpreters were found");
  add_output_options(sub, opts->output);
  add_gcore_dump_options(sub, opts->gcore);
  sub->callback([opts, &action] {
    opts->output.color = output_wants_color();
    action = [opts] { return run_dump(*opts); };
  });
}

}  // namespace hangscan::cli
