// hash_mix: folds one more value into a running hash.
//
// Why one helper: frames and stacks are hashed field by field in several places (the stack
// table, the run-wide frame table, the agent writer, grouping keys); one mixing step keeps
// them alike and keeps the constant in one place.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

namespace hangscan {

inline void hash_mix(std::size_t& h, std::size_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
}

// The hash of a frame's content, for a Frame and a FrameView (util/shared_stacks.h) alike: both
// name their fields the same, and a string hashes as its string_view does, so a frame and its
// view hash equal. Why a subset of the fields: every equality of frames compares at least these,
// so equal frames hash equal; the rest (locals' text, source, end positions) only decide ties.
template <class F>
std::size_t frame_content_hash(const F& f) {
  std::hash<std::string_view> hs;
  std::size_t h = hs(f.function);
  hash_mix(h, static_cast<std::size_t>(f.kind));
  hash_mix(h, f.file ? hs(*f.file) : 1);
  hash_mix(h, static_cast<std::size_t>(f.line.value_or(-1)));
  hash_mix(h, hs(f.module));
  hash_mix(h, static_cast<std::size_t>(f.pc));
  hash_mix(h, static_cast<std::size_t>(f.offset));
  hash_mix(h, hs(f.build_id));
  hash_mix(h, f.locals.size());
  hash_mix(h, static_cast<std::size_t>(f.column.value_or(-1)));
  return h;
}

}  // namespace hangscan
