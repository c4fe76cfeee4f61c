// The process's initial stack: argc, argv[], envp[] and the auxiliary vector as the kernel
// laid them out at exec.
//
// Why: a core has no /proc/PID/environ and its NT_PRPSINFO keeps only 80 bytes of command
// line. Both survive in full at the top of the main thread's stack, where the kernel put
// them; ranks of a crashed job get their RANK / WORLD_SIZE from here. The auxiliary vector
// (NT_AUXV in a core) is found again in that memory, and argv/envp are the pointer arrays
// just below it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "target/memory_reader.h"

namespace hangscan {

struct InitialStack {
  std::vector<std::string> argv;
  std::vector<std::string> envp;
  std::uint64_t auxv_address = 0;
};

// Searches [lo, hi) of `mem` (the stack mapping) from the top down for the auxiliary vector
// `auxv` (type/value pairs without the AT_NULL terminator), then reads the arrays below it.
// nullopt when the vector is not found or the arrays do not make sense.
std::optional<InitialStack> read_initial_stack(
    MemoryReader& mem, std::uint64_t lo, std::uint64_t hi,
    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& auxv);

}  // namespace hangscan
