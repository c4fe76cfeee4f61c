// SymbolCache: symbolized frames keyed by (module identity, module offset).
//
// Why: symbolizing (DWARF line tables, inline scopes, demangling) is the expensive part of a
// capture and the same addresses recur across threads, ranks and cores of one job. The key
// is the build-id when there is one (else the module path), so results are shared across
// targets that load the same binaries at different addresses. One cache per run.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "hangscan/model.h"
#include "unwind/module_symbolizer.h"

namespace hangscan {

class SymbolCache {
 public:
  // Frames for one return address: inline frames first, then the native frame. pc is not
  // part of the cached value (it differs per target); callers fill it in.
  std::optional<std::vector<Frame>> find(const std::string& module_key, std::uint64_t offset,
                                         bool exact) const;
  bool contains(const std::string& module_key, std::uint64_t offset, bool exact) const;
  void insert(const std::string& module_key, std::uint64_t offset, bool exact,
              std::vector<Frame> frames);
  std::size_t size() const;

  // Symbolizes `vaddr` of the module file at `path` through one Dwfl per module key, opened
  // once per run (the DWARF of a big library is read once for all ranks and cores).
  std::vector<Frame> symbolize_offline(const std::string& module_key, const std::string& path,
                                       std::uint64_t vaddr) {
    return offline_.symbolize(module_key, path, vaddr);
  }
  // Starts opening the DWARF of modules (key, path) that symbolize_offline() will be asked
  // about.
  void prefetch_offline(const std::vector<std::pair<std::string, std::string>>& modules) {
    offline_.prefetch(modules);
  }
  // Looks up the ELF symbols of `vaddrs` of that module in one pass (see find_symbols).
  void prefetch_names(const std::string& module_key, const std::string& path,
                      const std::vector<std::uint64_t>& vaddrs) {
    offline_.prefetch_names(module_key, path, vaddrs);
  }
  // Module keys (build-id, else path) whose DWARF ran out of memory (OfflineModules::starved).
  std::set<std::string> starved_modules() const { return offline_.starved(); }

 private:
  static std::string key(const std::string& module_key, std::uint64_t offset, bool exact);
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::vector<Frame>> map_;
  OfflineModules offline_;
};

}  // namespace hangscan
