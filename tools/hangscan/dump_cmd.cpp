// `hangscan dump`: capture live processes on this machine.
#include "cli.h"

namespace hangscan::cli {

void add_dump_command(CLI::App& app, Action& action) {
  auto* sub = app.add_subcommand("dump", "Stacks of every thread of live processes");
  sub->callback([&action] { action = [] { return kExitNothing; }; });
}

}  // namespace hangscan::cli
