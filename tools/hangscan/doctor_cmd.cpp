// `hangscan doctor [--pid PID]`: what would stop ptrace or cores from working here, with fixes.
#include <fmt/core.h>

#include <memory>

#include "cli.h"
#include "corewrite/doctor.h"

namespace hangscan::cli {

namespace {

struct DoctorCmdOptions {
  int pid = 0;
  std::string dir = ".";
};

int run_doctor_cmd(const DoctorCmdOptions& o) {
  DoctorOptions opts;
  if (o.pid > 0) opts.pid = o.pid;
  opts.core_dir = o.dir;
  bool failed = false;
  for (const auto& c : run_doctor(opts)) {
    fmt::print("{} {}: {}", doctor_level_name(c.level), c.name, c.finding);
    if (!c.fix.empty() && c.level != DoctorCheck::Level::ok) fmt::print(" fix: {}", c.fix);
    fmt::print("\n");
    failed = failed || c.level == DoctorCheck::Level::fail;
  }
  return failed ? kExitPartial : kExitComplete;
}

}  // namespace

void add_doctor_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<DoctorCmdOptions>();
  auto* sub = app.add_subcommand(
      "doctor", "Check what would stop ptrace or cores from working, and say how to fix it");
  sub->add_option("-p,--pid", opts->pid, "Also check this process")->check(process_id());
  sub->add_option("-o,--output-dir", opts->dir, "Where 'hangscan gcore' would write")
      ->capture_default_str();
  sub->callback([opts, &action] { action = [opts] { return run_doctor_cmd(*opts); }; });
}

}  // namespace hangscan::cli
