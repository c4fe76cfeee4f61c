// The environment of a process as the process sees it now, read from its memory.
//
// Why: /proc/PID/environ (and a core's initial stack) only show the environment a process
// started with. A rank spawned by torch.multiprocessing.spawn sets os.environ["RANK"] after it
// started; CPython's os.environ writes call putenv, which rebuilds libc's `environ` array, so
// the rank is only visible there. Reading that array through the Target's MemoryReader works
// the same for live processes and cores, needs no stop and never calls into the target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hangscan/result.h"
#include "target/memory_reader.h"
#include "target/target.h"

namespace hangscan {

// Bounds for walking an array that bad memory could make endless.
struct EnvironLimits {
  std::size_t max_entries = 16384;
  std::size_t max_entry_bytes = 128 * 1024;
  std::size_t max_total_bytes = 8 * 1024 * 1024;
};

// Walks a NULL-terminated char* array starting at `array_addr`. Errc::bad_data when a pointer
// or string is unreadable or a limit is hit before the terminating NULL.
Result<std::vector<std::string>> read_environ_array(MemoryReader& mem, std::uint64_t array_addr,
                                                    const EnvironLimits& limits = {});

// Reads the value of libc's `environ` variable and walks the array it points to. The variable
// is looked up in the executable first (the first file mapping): an executable that references
// `environ` holds a copy-relocated definition (Debian's python3.11 does) which libc then uses
// instead of its own, so its copy must be tried before libc's. Then libc, then the other
// modules: a library of the same name elsewhere is not the one libc uses, and a torch process
// maps ~300 files that need not be opened.
Result<std::vector<std::string>> read_environment_from_memory(Target& t);

// The environment as the process sees it now: from memory when possible, else
// Target::environment() (/proc/PID/environ or the core's initial stack). Empty when neither
// is readable.
std::vector<std::string> read_environment(Target& t);

}  // namespace hangscan
