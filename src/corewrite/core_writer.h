// write_core(): a size-bounded core of a live process, taken while it runs on.
//
// Why: the usual advice for a hang (`gcore` or `kill -ABRT` on every rank) gives cores of
// many gigabytes each, and ABRT ends the job. This takes the core itself: the process is
// stopped only while its memory is copied (the pause is measured), and the core keeps what
// stacks need (see core_plan.h) and leaves the bulk out. `hangscan gcore`, `hangscan dump
// --gcore` and the cluster modes (on each node) all call this one function.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hangscan/result.h"

namespace hangscan {

struct CoreWriteOptions {
  std::string dir = ".";                  // where the core goes (util/safe_output.h rules)
  std::string dir_option = "-o";          // the flag that named `dir`, for messages and hints
  bool create_dir = false;                // make `dir` (mode 0700) when it is missing
  std::uint64_t max_size = 256ull << 20;  // --max-size
  std::optional<int> rank;                // in the file name; found from the environment if unset
  std::string host;                       // in the file name; this host if empty
  bool python = true;                     // keep the memory the Python stacks need
  std::chrono::milliseconds freeze_timeout{3000};
};

struct CoreWriteResult {
  std::string path;
  std::int64_t pause_us = 0;           // the target was stopped this long
  std::uint64_t file_size = 0;         // st_size
  std::uint64_t disk_bytes = 0;        // blocks on disk (zero pages are holes)
  std::uint64_t kept_bytes = 0;        // memory read into PT_LOAD segments
  std::uint64_t unreadable_bytes = 0;  // memory to keep that could not be read (holes)
  std::uint64_t omitted_bytes = 0;     // memory listed in the HANGSCAN note
  std::size_t threads = 0;
  std::optional<int> rank;
  std::string python_version;         // empty: not Python (or not readable)
  std::vector<std::string> omitted;   // the HANGSCAN note's lines
  std::vector<std::string> warnings;  // threads without registers, over the cap ...
};

// This machine's host name ("localhost" when it has none), for core file names.
std::string local_host_name();

// "core.<host>.<pid>", or "core.<host>.rank<rank>.<pid>" when the rank is known.
std::string core_file_name(const std::string& host, std::optional<int> rank, int pid);

// Takes the core. The directory is opened once and checked as OutputDir does (a link of another
// user on the way, or a directory others may write, is refused); the file is created new
// (O_EXCL|O_NOFOLLOW, in that open directory) with mode 0600: cores hold secrets. It is
// written under a hidden name (".NAME.partial-WRITERPID") and named only when complete; if the
// process dies while it is written, the file is removed and the error (Errc::no_such_process)
// says how the process ended: a core with holes where memory could not be read after the death
// would look like a good one.
Result<CoreWriteResult> write_core_detailed(int pid, const CoreWriteOptions& opts);

// The same, for callers that only need the path.
Result<std::string> write_core(int pid, const CoreWriteOptions& opts);

}  // namespace hangscan
