// `hangscan doctor [--pid PID]`: what would stop ptrace or cores from working here, with fixes.
#include <fmt/core.h>

#include <memory>

#include <unistd.h>

#include "capture/quiet_source.h"
#include "cli.h"
#include "doctor/doctor.h"
#include "fanout/agent_version.h"
#include "util/escape.h"
#include "watch/ebpf_readiness.h"

namespace hangscan::cli {

namespace {

struct DoctorCmdOptions {
  int pid = 0;
  std::string dir = ".";
  std::string agent_path;  // --agent-path: the fan-out's agent binary on this node
};

int run_doctor_cmd(const DoctorCmdOptions& o) {
  DoctorOptions opts;
  if (o.pid > 0) opts.pid = o.pid;
  opts.core_dir = o.dir;
  bool failed = false;
  auto checks = run_doctor(opts);
  if (auto e = ebpf_readiness(); true)
    checks.push_back(
        {e.ready ? DoctorCheck::Level::ok : DoctorCheck::Level::warn, "ebpf", e.finding, e.fix});
  // Whether dump leaves blocked threads asleep (the quiet path): the kernel's own answer, from
  // loading the snapshot program for hangscan itself (closed again at once).
  if (auto q = open_quiet_source(::getpid()); q)
    checks.push_back({DoctorCheck::Level::ok, "quiet-dump",
                      "dump copies blocked threads with BPF and stops only running ones", ""});
  else
    checks.push_back({DoctorCheck::Level::warn, "quiet-dump",
                      "dump stops every thread with ptrace: " + q.error().what(), q.error().hint});
  if (!o.agent_path.empty()) {
    AgentBinaryCheck a = check_agent_binary(o.agent_path);
    using L = AgentBinaryCheck::Level;
    checks.push_back({a.level == L::ok     ? DoctorCheck::Level::ok
                      : a.level == L::warn ? DoctorCheck::Level::warn
                                           : DoctorCheck::Level::fail,
                      "agent", a.finding, a.fix});
  }
  for (const auto& c : checks) {
    fmt::print("{} {}: {}", doctor_level_name(c.level), escape_for_text(c.name),
               escape_for_text(c.finding));
    if (!c.fix.empty() && c.level != DoctorCheck::Level::ok)
      fmt::print(" fix: {}", escape_for_text(c.fix));
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
  sub->add_option(
      "--agent-path", opts->agent_path,
      "Check that the hangscan binary at PATH (the fan-out's agent here) is this version");
  sub->callback([opts, &action] { action = [opts] { return run_doctor_cmd(*opts); }; });
}

}  // namespace hangscan::cli
