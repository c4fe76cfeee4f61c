// CoreTarget: a core file seen through the Target interface.
//
// Why: live and core are one pipeline. Once a core is a Target, the same unwinder, Python
// layer, grouping and writers produce its report: memory comes from the core's PT_LOAD
// segments (and from the mapped files on disk for pages the kernel did not dump), threads and
// registers from NT_PRSTATUS, the module map from NT_FILE, the environment from the initial
// stack. Freezing is a no-op: a core is already frozen.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hangscan/result.h"
#include "target/core_file.h"
#include "target/core_modules.h"
#include "target/target.h"

namespace hangscan {

struct CoreOpenOptions {
  std::string exe;                     // --exe: the executable that crashed
  std::string sysroot;                 // --sysroot: root of the crashed machine's files
  std::vector<std::string> lib_paths;  // --lib-path: directories searched by file name
  // Shared by the cores of one run (the same files, stat'ed and read once); null: per core.
  std::shared_ptr<ModuleFileCache> file_cache;
};

// Opens and parses `core_path` (plain, .zst or .lz4). Errors are one line with a hint.
Result<std::unique_ptr<Target>> open_core_target(const std::string& core_path,
                                                 const CoreOpenOptions& opts);

// Same over an already parsed core (tests, fuzzing).
std::unique_ptr<Target> make_core_target(std::unique_ptr<CoreFile> core,
                                         const CoreOpenOptions& opts);

// The tid of the thread that took the fatal signal: the kernel writes that thread's
// NT_PRSTATUS first, with pr_cursig set. nullopt when no signal was being delivered: a gcore
// of a live process (gdb records its SIGSTOP in NT_SIGINFO but leaves pr_cursig 0).
std::optional<int> crashed_thread(const CoreFile& core);

// The signal that killed the process (NT_SIGINFO, else pr_cursig); nullopt as above.
std::optional<SignalInfo> fatal_signal(const CoreFile& core);

}  // namespace hangscan
