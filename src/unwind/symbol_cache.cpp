#include "unwind/symbol_cache.h"

#include <charconv>

namespace hangscan {

// module@offset (hex), "!" for an exact address; built by hand: every frame of every sample
// asks, and formatting was a visible share of `watch`'s CPU.
std::string SymbolCache::key(const std::string& module_key, std::uint64_t offset, bool exact) {
  char digits[17];
  auto end = std::to_chars(digits, digits + sizeof(digits), offset, 16).ptr;
  std::string out;
  out.reserve(module_key.size() + 19);
  out += module_key;
  out += '@';
  out.append(digits, end);
  if (exact) out += '!';
  return out;
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
