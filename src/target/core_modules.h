// CoreModules: which file on this machine stands for each file a core had mapped.
//
// Why: a core names its files by the paths they had on the machine that crashed. Here they
// may live under a sysroot, in a directory given with --lib-path, or be a different build.
// Symbols from the wrong build are worse than none, so every ELF module is checked by its
// GNU build-id (from the ELF header page the kernel dumps, against the file on disk), and a
// mismatch or a missing file becomes a warning in the report rather than silence.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hangscan/model.h"
#include "target/memory_reader.h"
#include "target/target.h"

namespace hangscan {

// The GNU build-id (hex) of an ELF file on disk; nullopt when absent or unreadable.
std::optional<std::string> build_id_of_file(const std::string& path);
// The GNU build-id of an ELF image mapped at `start` in a target's memory, read through its
// program headers; nullopt when the header page or the note is not readable.
std::optional<std::string> build_id_in_memory(MemoryReader& mem, std::uint64_t start);
// The GNU build-id in a block of ELF notes.
std::optional<std::string> find_gnu_build_id(const std::uint8_t* notes, std::size_t size);

// What a run learns about files on this machine: whether a path is a regular file and its
// build-id. Why shared: the 32 cores of one job map the same ~300 files; each is looked at
// once per run, not once per core. Files are assumed not to change during a run. Thread-safe.
class ModuleFileCache {
 public:
  struct Info {
    bool regular = false;
    std::string build_id;  // empty when none or unreadable
  };
  Info get(const std::string& path);

 private:
  std::mutex mu_;
  std::unordered_map<std::string, Info> files_;
};

struct ResolvedModule {
  std::optional<std::string> local;  // chosen file on this machine
  std::string core_build_id;         // from the core's memory; empty when unknown
  std::string file_build_id;         // of `local`; empty when unknown
  bool is_elf = false;
};

class CoreModules {
 public:
  // `files` may be shared by every core of a run; null: a private one.
  CoreModules(std::string sysroot, std::vector<std::string> lib_paths,
              std::shared_ptr<ModuleFileCache> files = nullptr)
      : sysroot_(std::move(sysroot)),
        lib_paths_(std::move(lib_paths)),
        files_(files ? std::move(files) : std::make_shared<ModuleFileCache>()) {}

  // Resolves every distinct file of `mappings` once. `core_memory` must read the core only
  // (no fallback to files), so the build-id it yields is the crashed process's.
  // `exe_core_path` is the executable's path in the core; `exe_override` (--exe) replaces it.
  void resolve_all(const std::vector<Mapping>& mappings, MemoryReader& core_memory,
                   const std::string& exe_core_path, const std::string& exe_override);

  std::optional<std::string> local_path(const std::string& core_path) const;
  const ResolvedModule* find(const std::string& core_path) const;
  // Missing files and build-id mismatches, for the report.
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<std::string> candidates(const std::string& core_path) const;
  ResolvedModule resolve(const std::string& core_path, const std::optional<std::string>& core_id,
                         const std::string& override_path);

  std::string sysroot_;
  std::vector<std::string> lib_paths_;
  std::shared_ptr<ModuleFileCache> files_;
  std::map<std::string, ResolvedModule> modules_;
  std::vector<Diagnostic> diagnostics_;
};

}  // namespace hangscan
