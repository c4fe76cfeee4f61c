// `hangscan core FILE...`: stacks, crash explanation and grouping from core files.
//
// Why one command for many cores: a crashed job leaves one core per rank; reading them
// together shares the symbol work (one SymbolCache: the same build-ids are symbolized once)
// and groups the ranks exactly as live mode does, so the odd core stands out.
#include <fmt/core.h>

#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "jobs/local_jobs.h"
#include "output.h"
#include "util/escape.h"

namespace hangscan::cli {

namespace {

struct CoreCmdOptions {
  std::vector<std::string> files;
  std::string exe;
  std::string sysroot;
  std::vector<std::string> lib_paths;
  CaptureFlags capture;
  bool verbose = false;
  OutputOptions output;
};

int run_core(const CoreCmdOptions& o) {
  JobOptions run;
  run.capture = core_capture_options(o.capture);
  std::vector<std::string> log;
  if (o.verbose) run.capture.log = &log;
  run.core = CoreOpenOptions{o.exe, o.sysroot, o.lib_paths, std::make_shared<ModuleFileCache>()};
  PhaseClock clock;
  run.clock = &clock;
  clock.start();
  JobSnapshot job = run_core_job(o.files, run);
  for (const auto& d : job.diagnostics) {
    if (d.severity == Diagnostic::Severity::error) print_error(d.message, d.hint);
  }
  for (const auto& line : log) fmt::print(stderr, "hangscan: {}\n", escape_for_text(line));
  if (job.processes.empty()) {
    if (o.files.size() > 1) print_error("none of the cores could be read");
    return kExitNothing;
  }
  auto analysis = analyze_job(job, o.output);
  bool written = analysis && write_report(job, *analysis, o.output);
  clock.lap(PhaseClock::report);
  if (o.verbose) fmt::print(stderr, "hangscan: {}\n", clock.summary());
  if (!written) return kExitNothing;
  return exit_code_for(job);
}

}  // namespace

void add_core_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<CoreCmdOptions>();
  auto* sub = app.add_subcommand(
      "core", "Stacks of every thread of core files, the crash explained, cores grouped by rank");
  sub->add_option("files", opts->files, "Core files (plain, or systemd-coredump .zst/.lz4)")
      ->required();
  sub->add_option("--exe", opts->exe, "The executable that crashed (default: found from the core)");
  sub->add_option("--sysroot", opts->sysroot,
                  "Directory holding the crashed machine's files (paths in the core are "
                  "looked up under it)");
  sub->add_option("--lib-path", opts->lib_paths,
                  "Directory searched for libraries by file name (repeatable)");
  add_capture_flags(sub, opts->capture, CaptureFlagSet::core);
  sub->add_flag("-v,--verbose", opts->verbose,
                "Say how the interpreter was found and where the time went");
  add_output_options(sub, opts->output);
  sub->callback([&action, opts] { action = [opts] { return run_core(*opts); }; });
}

}  // namespace hangscan::cli
