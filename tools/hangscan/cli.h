// Shared pieces of the command-line front end.
//
// Why: every subcommand lives in its own file (dump, core, slurm, pdsh, agent, gcore,
// doctor) and registers itself on the CLI11 app; they share exit codes and the one way
// errors are printed (one line, then a hint).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "hangscan/result.h"
#include "jobs/capture_flags.h"

namespace hangscan::cli {

inline constexpr int kExitComplete = 0;
inline constexpr int kExitPartial = 1;
inline constexpr int kExitNothing = 2;
inline constexpr int kExitUsage = 64;

// Largest pid Linux hands out (kernel.pid_max can be raised to 2^22 at most).
inline constexpr long long kMaxPid = 4194304;

// Validators of numeric flags (flags.cpp). A bad value is a usage error that says what was
// expected: "--pid: 'abc' is not a process id (a whole number from 1 to 4194304)".
// Why not CLI::Range: its message is CLI11's ("Value abc not in range 0.000000 to 1.79e308")
// and it lets "nan" through.
CLI::Validator whole_number(const std::string& what, long long lo, long long hi);
CLI::Validator process_id();
// A finite decimal number in [lo, hi]: "nan", "inf" and "1e999" are refused.
CLI::Validator finite_number(const std::string& what, double lo, double hi);
// "see 'hangscan SUB --help'" for the subcommand named on the command line.
std::string help_hint(const CLI::App& app, int argc, char** argv);

// The capture flags, parsed once into `flags` (jobs/capture_flags.h). Live targets (dump,
// agent, --slurm-job, pdsh): --unwinder --native --locals --nonblocking --no-python --no-bpf.
// Cores:
// --unwinder --no-python --python-only --locals.
enum class CaptureFlagSet { live, core };
void add_capture_flags(CLI::App* app, CaptureFlags& flags,
                       CaptureFlagSet set = CaptureFlagSet::live);

// The action chosen by parsing; returns the process exit code.
using Action = std::function<int()>;

// Prints "hangscan: <what>" and, when present, "hint: <hint>" to stderr.
void print_error(const Error& error);
void print_error(const std::string& message, const std::string& hint = {});
// Each of `errors` as print_error does, in order (problems a library call returned as data).
void print_errors(const std::vector<Error>& errors);

// Registration functions, one per subcommand file.
void add_dump_command(CLI::App& app, Action& action);
void add_core_command(CLI::App& app, Action& action);
void add_gcore_command(CLI::App& app, Action& action);
void add_doctor_command(CLI::App& app, Action& action);
void add_agent_command(CLI::App& app, Action& action);
void add_pdsh_command(CLI::App& app, Action& action);
void add_watch_command(CLI::App& app, Action& action);
void add_logs_command(CLI::App& app, Action& action);
// Not a subcommand: adds the top-level --slurm-job/--jobid and the options that go with it.
void add_slurm_command(CLI::App& app, Action& action);
// `hangscan k8s SELECTOR`: the agent in every pod of a Kubernetes job (src/fanout/k8s.h).
void add_k8s_command(CLI::App& app, Action& action);

}  // namespace hangscan::cli
