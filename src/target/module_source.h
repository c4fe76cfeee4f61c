// ModuleSource: what turning copied stacks into frames needs of the process they came from.
//
// Why: unwinding and symbolizing a copy (capture/finish.h) needs the process's mappings, the
// file behind each one (symbols, CFI) and a reader for the few bytes outside the copies (the
// [vdso] image, unwind tables of modules without a file, Python code objects); it needs none
// of the rest of a Target (freeze, descriptions, environment). A live process and a core are
// ModuleSources through their Target; the eBPF recorder is one over a live pid's maps, with
// its sampled stacks as the copies; a unit test is one over fabricated memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hangscan/result.h"
#include "proc/mapping.h"
#include "proc/target_file.h"
#include "target/memory_reader.h"

namespace hangscan {

class ModuleSource {
 public:
  virtual ~ModuleSource() = default;

  // The process id (messages, libdw's attach, /proc/PID/cwd for relative source names).
  virtual int pid() const = 0;
  // True for a process running on this machine (its relative file names resolve through
  // /proc/PID/cwd); false for a core.
  virtual bool is_live() const = 0;

  // Memory outside the copies. A source without one returns a reader that reads nothing: frames
  // whose unwinding needs such bytes then end the stack (an incomplete stack, not a wrong one).
  virtual MemoryReader& memory() = 0;
  virtual const std::vector<Mapping>& mappings() const = 0;

  // Where to open the file behind a mapping on this machine (sysroot remapping for cores,
  // /proc/PID/map_files for deleted files of live processes). nullopt: not available.
  virtual std::optional<std::string> local_path(const Mapping& m) const = 0;

  // The text of a file the target names (a Python source file) as the target itself could
  // read it (proc/target_file.h): in its own root, with its credentials, a regular file of at
  // most `max_bytes`. Why here: only the source knows whose view and credentials apply (a
  // live process's, a core's sysroot). Default: no files (Errc::unsupported).
  virtual Result<TargetFile> read_target_file(const std::string& name, std::size_t max_bytes) {
    (void)name;
    (void)max_bytes;
    return Error(Errc::unsupported, "this target has no files");
  }
  // When the target started (ns since the epoch), to tell a file changed since; nullopt unknown.
  virtual std::optional<std::int64_t> started_unix_ns() const { return std::nullopt; }
};

}  // namespace hangscan
