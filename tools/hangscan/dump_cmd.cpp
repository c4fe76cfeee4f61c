// `hangscan dump`: capture live processes on this machine, group them, report.
#include <signal.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/core.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "fanout/coredumps.h"
#include "gcore_cmd.h"
#include "jobs/local_jobs.h"
#include "output.h"
#include "util/escape.h"

namespace hangscan::cli {

namespace {

// The end of `dump`: the report, then (--gcore) the cores; returns the exit code.
int finish_local_report(const JobSnapshot& job, const OutputOptions& output,
                        const GcoreDumpOptions& o) {
  auto analysis = analyze_job(job, output);
  if (!analysis || !write_report(job, *analysis, output)) return kExitNothing;
  int rc = exit_code_for(job);
  if (o.requested() && !write_job_cores(job, *analysis, o)) rc = std::max(rc, kExitPartial);
  return rc;
}

struct DumpOptions {
  std::vector<int> pids;
  bool subprocesses = false;
  std::string match;
  CaptureFlags capture;
  bool verbose = false;
  int timeout_ms = 3000;
  int samples = 1;
  double interval = 1.0;
  OutputOptions output;
  GcoreDumpOptions gcore;
};

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
  LocalJobRequest req;
  req.pids = o.pids;
  req.subprocesses = o.subprocesses;
  req.match = o.match;
  req.run.capture = live_capture_options(o.capture);
  req.run.capture.freeze_timeout = std::chrono::milliseconds(o.timeout_ms);
  req.run.samples = o.samples;
  req.run.interval_s = o.interval;
  req.run.explain_deaths = true;
  req.run.resolve_waits = true;
  req.run.remember_since = true;
  std::vector<std::string> log;
  if (o.verbose) req.run.capture.log = &log;
  // Tests only (test_outcomes.py): hangscan stops itself while a target is frozen, so the test
  // can kill the target at exactly that moment.
  if (const char* hook = std::getenv("HANGSCAN_TEST_STOP_WHILE_FROZEN");
      hook != nullptr && *hook == '1') {
    req.run.capture.while_frozen = [] { ::raise(SIGSTOP); };
  }

  LocalJob run = run_local_job(req);
  // A bad explicit pid gets its own error line and hint rather than vanishing.
  for (const auto& r : run.rejected) print_error(r.error);
  if (run.error) {
    print_error(*run.error);
    return run.error->code == Errc::usage ? kExitUsage : kExitNothing;
  }
  if (!run.ran) {
    // Every --pid refused as a usage error (hangscan's own pid) is a usage error.
    bool usage = !run.rejected.empty() &&
                 std::all_of(run.rejected.begin(), run.rejected.end(),
                             [](const auto& r) { return r.error.code == Errc::usage; });
    return usage ? kExitUsage : kExitNothing;
  }
  for (const auto& snap : run.job.processes) {
    for (const auto& d : snap.diagnostics) {
      if (d.severity == Diagnostic::Severity::error) print_error(d.message, d.hint);
    }
  }
  for (const auto& line : log) fmt::print(stderr, "hangscan: {}\n", escape_for_text(line));
  locate_coredumps(run.job, Deadline::after(std::chrono::milliseconds(5000)));
  return finish_local_report(run.job, o.output, o.gcore);
}

}  // namespace

void add_dump_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<DumpOptions>();
  auto* sub =
      app.add_subcommand("dump", "Stacks of every thread of live processes, grouped by rank");
  sub->add_option("-p,--pid", opts->pids, "Process id (repeatable)")->check(process_id());
  sub->add_flag("--subprocesses", opts->subprocesses, "Also every descendant of each --pid");
  sub->add_option("--match", opts->match,
                  "Processes whose command line matches REGEX (like pgrep -f)");
  add_capture_flags(sub, opts->capture);
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
