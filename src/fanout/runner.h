// run_command(): run one child program (srun, pdsh, squeue, scontrol) with a deadline.
//
// Why: a hang tool must not hang on the tools it drives. srun can wait for a dead node, pdsh
// for an ssh that never connects, scontrol for a busy controller. Every child runs from an
// argv vector (never a shell line built from names), in its own process group so that the
// whole group (srun and its helpers, pdsh and its ssh children) is killed when the deadline
// passes, and with bounded capture so a flood of output cannot exhaust memory. The child
// gets SIGTERM if hangscan itself dies (PR_SET_PDEATHSIG).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hangscan/result.h"
#include "util/deadline.h"

namespace hangscan {

struct CommandSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH unless it has '/'
  // Environment changes applied to a copy of ours: variables starting with one of
  // `unset_prefixes` are removed unless listed in `keep`; then `set` is applied.
  std::vector<std::string> unset_prefixes;
  std::vector<std::string> keep;
  std::vector<std::pair<std::string, std::string>> set;
  std::size_t max_stdout = std::size_t{256} << 20;  // bytes kept; the rest is read and dropped
  std::size_t max_stderr = std::size_t{1} << 20;
  // After the deadline: SIGTERM to the group, this long to exit, then SIGKILL.
  std::chrono::milliseconds kill_grace{1000};
  // After the child exits, how long to keep reading from helpers that still hold its pipes.
  std::chrono::milliseconds drain_after_exit{500};
};

struct CommandResult {
  int exit_code = -1;      // -1 when killed by a signal or not reaped
  int term_signal = 0;     // the signal that ended it, 0 if it exited
  bool timed_out = false;  // the deadline passed and the group was killed
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  std::string out;
  std::string err;
  std::chrono::milliseconds elapsed{0};

  bool succeeded() const { return exit_code == 0 && !timed_out; }
};

// Called with every complete stdout line (without '\n') as it arrives, e.g. to count
// answered nodes while srun is still running. Lines past max_stdout are still delivered.
using LineHandler = std::function<void(std::string_view line)>;

// Errc::not_found when the program is not in PATH, Errc::io when it cannot be started. A
// child that fails, is killed, or times out is NOT an error: see CommandResult.
Result<CommandResult> run_command(const CommandSpec& spec, const Deadline& deadline,
                                  const LineHandler& on_stdout_line = {});

// POSIX sh single-quoting: the result is one word whatever `word` holds ('\'' for quotes).
// Used for the one remote shell line hangscan builds (pdsh --remote-setup) and for messages.
std::string shell_quote(std::string_view word);

// The argv rendered for messages and --verbose (shell-quoted where needed; never executed).
std::string describe_argv(const std::vector<std::string>& argv);

}  // namespace hangscan
