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
#include <string>
#include <unordered_map>
#include <vector>

#include "hangscan/model.h"

namespace hangscan {

class SymbolCache {
 public:
  // Frames for one return address: inline frames first, then the native frame. pc is not
  // part of the cached value (it differs per target); callers fill it in.
  std::optional<std::vector<Frame>> find(const std::string& module_key, std::uint64_t offset,
                                         bool exact) const;
  void insert(const std::string& module_key, std::uint64_t offset, bool exact,
              std::vector<Frame> frames);
  std::size_t size() const;

 private:
  static std::string key(const std::string& module_key, std::uint64_t offset, bool exact);
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::vector<Frame>> map_;
};

}  // namespace hangscan
