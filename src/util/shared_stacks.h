// SharedStacks: the frames and stacks of a whole run, interned once, shared by its readers.
//
// Why: the nodes of one job send the same frames and stacks, each node in its own document
// with its own table indexes. Readers of those documents (often several at once, as nodes
// answer) look every frame up here by content and every stack by its frame ids, so a frame is
// built once per run, a stack once per run, and every thread of every node with that stack
// holds the same FrameStack. Reading a node's frames then costs a hash per frame instead of a
// Frame with its strings, and the merge finds equal stacks by identity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hangscan/model.h"

namespace hangscan {

// A frame whose strings live elsewhere (in a document being read): what a reader looks up
// before it builds a Frame.
struct FrameView {
  FrameKind kind = FrameKind::native;
  std::string_view function;
  std::optional<std::string_view> file;
  std::optional<int> line;
  std::string_view module;
  std::uint64_t pc = 0;
  std::uint64_t offset = 0;
  std::string_view build_id;
  std::vector<std::pair<std::string_view, std::string_view>> locals;
  std::optional<int> column;
  std::optional<int> end_line;
  std::optional<int> end_column;
  std::optional<std::string_view> source;
};

class SharedStacks {
 public:
  // Readers on several threads share one table: each holds the lock while it resolves one
  // document's stacks (one lock per document, not per frame).
  std::unique_lock<std::mutex> hold() { return std::unique_lock<std::mutex>(mu_); }

  // The run-wide id of the frame (added when new). Caller holds hold().
  std::uint32_t frame_id(const FrameView& f);
  // The run-wide stack of these frame ids, innermost first (added when new; empty stays empty).
  // Caller holds hold().
  FrameStack stack(const std::vector<std::uint32_t>& frame_ids);

  std::size_t frames() const { return frames_.size(); }
  std::size_t stacks() const { return stack_count_; }

 private:
  struct IdsHash {
    std::size_t operator()(const std::vector<std::uint32_t>& ids) const;
  };

  std::mutex mu_;
  std::vector<Frame> frames_;                                                  // by run-wide id
  std::unordered_map<std::size_t, std::vector<std::uint32_t>> frame_buckets_;  // hash -> ids
  std::unordered_map<std::vector<std::uint32_t>, FrameStack, IdsHash> stacks_;
  std::size_t stack_count_ = 0;
};

}  // namespace hangscan
