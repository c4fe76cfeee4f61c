// hangscan entry point: parse, run the chosen subcommand, map failures to exit codes.
#include <fmt/core.h>

#include <cstdio>
#include <exception>
#include <new>

#include "cli.h"
#include "output.h"
#include "util/contain.h"
#include "util/escape.h"
#include "util/hints.h"
#include "util/version.h"

namespace hangscan::cli {

void print_error(const Error& error) {
  std::string hint = error.hint;
  print_error(error.what(), hint);
}

void print_errors(const std::vector<Error>& errors) {
  for (const Error& e : errors) print_error(e);
}

// Messages quote process, thread and file names: escaped (util/escape.h), one line each.
void print_error(const std::string& message, const std::string& hint) {
  fmt::print(stderr, "hangscan: {}\n", escape_for_text(message));
  if (!hint.empty()) fmt::print(stderr, "hint: {}\n", escape_for_text(hint));
}

}  // namespace hangscan::cli

// What a command throws is caught below; only start-up (the command table's allocations) and
// printing an error could still throw, and then ending the process is all there is left to do.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  using namespace hangscan::cli;
  reserve_standard_fds();
  CLI::App app{
      "hangscan: where is every thread and rank of a hung or crashed job, and which are odd"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", hangscan::hangscan_version_line());
  Action action;
  add_dump_command(app, action);
  add_core_command(app, action);
  add_gcore_command(app, action);
  add_doctor_command(app, action);
  add_agent_command(app, action);
  add_pdsh_command(app, action);
  add_watch_command(app, action);
  add_logs_command(app, action);
  add_slurm_command(app, action);
  add_k8s_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_error(e.what(), help_hint(app, argc, argv));
    return kExitUsage;
  }
  if (!action) {
    fmt::print(stderr, "{}", app.help());
    return kExitUsage;
  }
  try {
    return action();
  } catch (const std::bad_alloc&) {
    // The machine's limit, not a bug: say so in the words every other out-of-memory uses.
    print_error("out of memory", hangscan::hints::out_of_memory());
    return kExitNothing;
  } catch (const std::exception& e) {
    // A thread that could not be made (EAGAIN under `ulimit -v`) is the same limit.
    const auto* sys = dynamic_cast<const std::system_error*>(&e);
    if (sys != nullptr && hangscan::is_resource_limit(*sys)) {
      print_error(std::string("out of memory: ") + e.what(), hangscan::hints::out_of_memory());
      return kExitNothing;
    }
    print_error(e.what());
    return kExitNothing;
  }
}
