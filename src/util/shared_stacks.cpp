// Run-wide interning of frames (by content) and stacks (by frame ids).
#include "util/shared_stacks.h"

#include "util/hash_mix.h"

namespace hangscan {

namespace {

template <class A, class B>
bool same_optional(const std::optional<A>& a, const std::optional<B>& b) {
  return a.has_value() == b.has_value() && (!a || *a == *b);
}

bool same(const FrameView& v, const Frame& f) {
  if (v.kind != f.kind || v.function != f.function || !same_optional(v.file, f.file) ||
      v.line != f.line || v.module != f.module || v.pc != f.pc || v.offset != f.offset ||
      v.build_id != f.build_id || v.column != f.column || v.end_line != f.end_line ||
      v.end_column != f.end_column || !same_optional(v.source, f.source) ||
      v.locals.size() != f.locals.size()) {
    return false;
  }
  for (std::size_t i = 0; i < v.locals.size(); ++i) {
    if (v.locals[i].first != f.locals[i].name || v.locals[i].second != f.locals[i].value)
      return false;
  }
  return true;
}

Frame build(const FrameView& v) {
  Frame f;
  f.kind = v.kind;
  f.function = v.function;
  if (v.file) f.file = std::string(*v.file);
  f.line = v.line;
  f.module = v.module;
  f.pc = v.pc;
  f.offset = v.offset;
  f.build_id = v.build_id;
  for (const auto& [name, value] : v.locals)
    f.locals.push_back({std::string(name), std::string(value)});
  f.column = v.column;
  f.end_line = v.end_line;
  f.end_column = v.end_column;
  if (v.source) f.source = std::string(*v.source);
  return f;
}

}  // namespace

std::size_t SharedStacks::IdsHash::operator()(const std::vector<std::uint32_t>& ids) const {
  std::size_t h = ids.size();
  for (std::uint32_t id : ids) hash_mix(h, id);
  return h;
}

std::uint32_t SharedStacks::frame_id(const FrameView& f) {
  std::vector<std::uint32_t>& bucket = frame_buckets_[frame_content_hash(f)];
  for (std::uint32_t id : bucket) {
    if (same(f, frames_[id])) return id;
  }
  auto id = static_cast<std::uint32_t>(frames_.size());
  frames_.push_back(build(f));
  bucket.push_back(id);
  return id;
}

FrameStack SharedStacks::stack(const std::vector<std::uint32_t>& frame_ids) {
  if (frame_ids.empty()) return {};
  auto [it, fresh] = stacks_.try_emplace(frame_ids);
  if (fresh) {
    std::vector<Frame> frames;
    frames.reserve(frame_ids.size());
    for (std::uint32_t id : frame_ids) frames.push_back(frames_[id]);
    it->second = FrameStack(std::move(frames));
    ++stack_count_;
  }
  return it->second;
}

}  // namespace hangscan
