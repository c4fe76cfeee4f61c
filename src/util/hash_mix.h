// hash_mix: folds one more value into a running hash.
//
// Why one helper: frames and stacks are hashed field by field in several places (the stack
// table, the run-wide frame table, the agent writer, grouping keys); one mixing step keeps
// them alike and keeps the constant in one place.
#pragma once

#include <cstddef>

namespace hangscan {

inline void hash_mix(std::size_t& h, std::size_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
}

}  // namespace hangscan
