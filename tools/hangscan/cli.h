// Shared pieces of the command-line front end.
//
// Why: every subcommand lives in its own file (dump, core, slurm, pdsh, agent, gcore,
// doctor) and registers itself on the CLI11 app; they share exit codes and the one way
// errors are printed (one line, then a hint).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "hangscan/result.h"

namespace hangscan::cli {

inline constexpr int kExitComplete = 0;
inline constexpr int kExitPartial = 1;
inline constexpr int kExitNothing = 2;
inline constexpr int kExitUsage = 64;

// The action chosen by parsing; returns the process exit code.
using Action = std::function<int()>;

// Prints "hangscan: <what>" and, when present, "hint: <hint>" to stderr.
void print_error(const Error& error);
void print_error(const std::string& message, const std::string& hint = {});

// Registration functions, one per subcommand file.
void add_dump_command(CLI::App& app, Action& action);
void add_core_command(CLI::App& app, Action& action);
void add_gcore_command(CLI::App& app, Action& action);
void add_doctor_command(CLI::App& app, Action& action);
void add_agent_command(CLI::App& app, Action& action);
void add_pdsh_command(CLI::App& app, Action& action);
// Not a subcommand: adds the top-level --slurm-job/--jobid and the options that go with it.
void add_slurm_command(CLI::App& app, Action& action);

}  // namespace hangscan::cli
