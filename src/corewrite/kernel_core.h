// The kernel's own core of a live process (`hangscan gcore --signal ABRT --yes`): a signal whose
// default action dumps core, sent after checking that the kernel would write one.
//
// Why: hangscan's own cores (core_writer.h) leave the process running; some sites want the
// kernel's core (its core_pattern, systemd-coredump) and accept that the process ends. Which
// signals qualify, the core size limit check and where the kernel puts the core are library
// facts; the CLI asks for the confirmation and words the outcome.
#pragma once

#include <string>

#include "hangscan/result.h"

namespace hangscan {

// A core-dumping signal hangscan sends: ABRT, QUIT or SEGV, with or without "SIG".
struct CoreSignal {
  int number = 0;
  std::string name;  // without "SIG": "ABRT"
};

// Errc::usage (with the accepted names) for any other signal.
Result<CoreSignal> parse_core_signal(const std::string& text);

// Sends `signal` to `pid` unless its core size limit is 0 (the kernel would write nothing:
// Errc::unsupported, the prlimit to run as the hint), or the kill is refused (errno kept).
// Returns the kernel's core_pattern (without its newline; "?" when unreadable): where the core
// goes. `proc_root` is for tests.
Result<std::string> send_core_signal(int pid, const CoreSignal& signal,
                                     const std::string& proc_root = "/proc");

}  // namespace hangscan
