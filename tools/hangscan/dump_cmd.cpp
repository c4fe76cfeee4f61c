// `hangscan dump`: capture live processes on this machine.
#include <unistd.h>

#include <fmt/core.h>

#include <memory>
#include <string>
#include <vector>

#include "capture/capture.h"
#include "cli.h"
#include "output.h"
#include "target/live_target.h"

namespace hangscan::cli {

namespace {

struct DumpOptions {
  std::vector<int> pids;
  bool json = false;
  std::string unwinder = "libdw";
  bool native = false;
  bool locals = false;
  bool nonblocking = false;
  bool verbose = false;
  bool no_python = false;
  int timeout_ms = 3000;
  OutputOptions output;
};

int run_dump(const DumpOptions& o) {
  CaptureOptions copt;
  copt.unwinder = o.unwinder == "libunwind" ? UnwinderKind::libunwind : UnwinderKind::libdw;
  copt.merge_native = o.native;
  copt.locals = o.locals;
  copt.nonblocking = o.nonblocking;
  copt.python = !o.no_python;
  copt.freeze_timeout = std::chrono::milliseconds(o.timeout_ms);
  std::vector<std::string> log;
  if (o.verbose) copt.log = &log;

  SymbolCache symbols;
  JobSnapshot job;
  int failed = 0;
  int partial = 0;
  std::vector<Error> errors;
  for (int pid : o.pids) {
    auto target = open_live_target(pid);
    if (!target) {
      ++failed;
      errors.push_back(target.error());
      Diagnostic d;
      d.severity = Diagnostic::Severity::error;
      d.message = target.error().what();
      d.hint = target.error().hint;
      d.pid = pid;
      job.diagnostics.push_back(d);
      continue;
    }
    ProcessSnapshot snap = capture_process(**target, copt, symbols);
    bool fatal = false;
    for (const auto& d : snap.diagnostics) {
      if (d.severity == Diagnostic::Severity::error) fatal = true;
    }
    if (fatal) {
      ++failed;
      for (const auto& d : snap.diagnostics) {
        if (d.severity == Diagnostic::Severity::error) errors.push_back(Error(Errc::internal, d.message, 0, d.hint));
      }
    } else if (!snap.diagnostics.empty()) {
      ++partial;
    }
    job.processes.push_back(std::move(snap));
  }
  for (const auto& line : log) fmt::print(stderr, "hangscan: {}\n", line);
  for (const auto& e : errors) print_error(e);

  write_output(job, o.output);
  if (job.processes.empty()) return kExitNothing;
  if (failed > 0 || partial > 0) return kExitPartial;
  return kExitComplete;
}

}  // namespace

void add_dump_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<DumpOptions>();
  auto* sub = app.add_subcommand("dump", "Stacks of every thread of live processes");
  sub->add_option("-p,--pid", opts->pids, "Process id (repeatable)")->required()->check(CLI::PositiveNumber);
  sub->add_flag("--json", opts->output.json, "Write JSON (docs/output-schema.md)");
  sub->add_option("--unwinder", opts->unwinder, "Native unwinder")
      ->check(CLI::IsMember({"libdw", "libunwind"}))
      ->capture_default_str();
  sub->add_flag("--native", opts->native, "Interleave native and Python frames");
  sub->add_flag("--locals", opts->locals, "Show Python local variables");
  sub->add_flag("--nonblocking", opts->nonblocking,
                "Read Python frames without stopping the process (may be inconsistent)");
  sub->add_flag("--no-python", opts->no_python, "Do not read Python frames");
  sub->add_option("--timeout-ms", opts->timeout_ms, "Deadline to stop every thread")
      ->check(CLI::Range(1, 600000))
      ->capture_default_str();
  sub->add_flag("-v,--verbose", opts->verbose, "Say how the interpreter was found");
  sub->callback([opts, &action] {
    opts->output.color = output_wants_color();
    action = [opts] { return run_dump(*opts); };
  });
}

}  // namespace hangscan::cli
