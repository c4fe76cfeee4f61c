// Validators of numeric flags: every number on the command line is checked here, so a bad one
// is one line in hangscan's words ("--pid: 'abc' is not a process id ...") and exit 64,
// never CLI11's "Value abc not in range 0.000000 to 1.79e308" or a NaN taken as a timeout.
#include <fmt/core.h>

#include <string>

#include "cli.h"
#include "util/parse_number.h"

namespace hangscan::cli {

namespace {

std::string shown(const std::string& text) {
  return text.size() > 40 ? text.substr(0, 40) + "..." : text;
}

}  // namespace

CLI::Validator whole_number(const std::string& what, long long lo, long long hi) {
  auto check = [what, lo, hi](std::string& text) -> std::string {
    if (parse_int_in<long long>(text, lo, hi)) return {};
    return fmt::format("'{}' is not {} (a whole number from {} to {})", shown(text), what, lo, hi);
  };
  return CLI::Validator(check, fmt::format("{}-{}", lo, hi), "whole_number");
}

CLI::Validator process_id() { return whole_number("a process id", 1, kMaxPid); }

CLI::Validator finite_number(const std::string& what, double lo, double hi) {
  auto check = [what, lo, hi](std::string& text) -> std::string {
    auto v = parse_finite_double(text);
    if (v && *v >= lo && *v <= hi) return {};
    return fmt::format("'{}' is not {} (a number from {} to {})", shown(text), what, lo, hi);
  };
  return CLI::Validator(check, fmt::format("{}-{}", lo, hi), "finite_number");
}

void add_capture_flags(CLI::App* app, CaptureFlags& f, CaptureFlagSet set) {
  app->add_option("--unwinder", f.unwinder, "Native unwinder")
      ->check(CLI::IsMember({"libdw", "libunwind"}))
      ->capture_default_str();
  if (set == CaptureFlagSet::core) {
    app->add_flag("--no-python", f.no_python, "Do not read Python frames");
    app->add_flag("--python-only", f.python_only,
                  "Show Python frames only where a process runs Python (no native interleaving)");
    app->add_flag("--locals", f.locals, "Show Python local variables");
    return;
  }
  app->add_flag("--native", f.native, "Interleave native and Python frames");
  app->add_flag("--locals", f.locals, "Show Python local variables");
  app->add_flag("--nonblocking", f.nonblocking,
                "Read Python frames without stopping the process (may be inconsistent)");
  app->add_flag("--no-python", f.no_python, "Do not read Python frames");
  app->add_flag("--no-bpf", f.no_bpf,
                "Stop every thread with ptrace (no BPF copy of blocked threads)");
}

std::string help_hint(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    for (const auto* sub : app.get_subcommands({})) {
      if (sub->get_name() == arg) return fmt::format("see 'hangscan {} --help'", arg);
    }
  }
  return "see 'hangscan --help'";
}

}  // namespace hangscan::cli
