#include "unwind/symbol_cache.h"

#include <fmt/format.h>

namespace hangscan {

std::string SymbolCache::key(const std::string& module_key, std::uint64_t offset, bool exact) {
  return fmt::format("{}@{:x}{}", module_key, offset, exact ? "!" : "");
}

std::optional<std::vector<Frame>> SymbolCache::find(const std::string& module_key,
                                                    std::uint64_t offset, bool exact) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key(module_key, offset, exact));
  if (it == map_.end()) return std::nullopt;
  return it->second;
}

bool SymbolCache::contains(const std::string& module_key, std::uint64_t offset, bool exact) const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.count(key(module_key, offset, exact)) != 0;
}

void SymbolCache::insert(const std::string& module_key, std::uint64_t offset, bool exact,
                         std::vector<Frame> frames) {
  std::lock_guard<std::mutex> lock(mu_);
  map_.emplace(key(module_key, offset, exact), std::move(frames));
}

std::size_t SymbolCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.size();
}

}  // namespace hangscan
