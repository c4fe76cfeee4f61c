// StackTrie: the prefix tree of stacks, outermost frame first, with the members on each node.
//
// Why: a hung job is read top-down: "all ranks are in train(), 0-6,8-15 went into all_reduce,
// 7 went into load_batch". A prefix tree whose nodes carry member (and rank) sets shows exactly
// where ranks part ways, stays small (distinct stacks, not ranks) and merges across nodes.
#pragma once

#include <cstddef>
#include <optional>
#include <unordered_map>
#include <vector>

#include "group/rank_set.h"
#include "group/stack_key.h"
#include "hangscan/model.h"

namespace hangscan {

struct TrieNode {
  Frame frame;                        // reduced to the key (key_frame_copy of the first member)
  bool uniform_line = true;           // every member through here has the frame's line
  std::size_t parent = 0;             // root: itself
  int depth = 0;                      // root 0, outermost frame 1
  std::vector<std::size_t> children;  // in insertion order
  std::vector<std::size_t> members;   // process indexes through this node, ascending, unique
                                      // (filled by finish())
  std::vector<std::size_t> ending;    // members whose stack ends here (ascending, unique)
  RankSet ranks;                      // ranks of `members` (filled by finish())
};

class StackTrie {
 public:
  static constexpr std::size_t kRoot = 0;

  explicit StackTrie(GroupOptions::Granularity g = GroupOptions::Granularity::function);

  // Adds one stack (innermost-first range, as in the model) for process index `member` and
  // returns the node it ends on. Members must be inserted in ascending order.
  std::size_t insert(std::size_t member, FrameRange stack);

  // Adds `member` along the path that ends on `node` (returned by an earlier insert of the same
  // stack): a stack shared by many members is compared frame by frame only once.
  void insert_again(std::size_t member, std::size_t node);

  // Fills every node's members (from the endings below it) and rank set (members without
  // rank are skipped). Call once, after the last insert.
  void finish(const std::vector<ProcessSnapshot>& processes);

  const std::vector<TrieNode>& nodes() const { return nodes_; }
  const TrieNode& node(std::size_t i) const { return nodes_[i]; }
  GroupOptions::Granularity granularity() const { return granularity_; }

  // Path from the outermost frame down to `node` (root excluded).
  std::vector<std::size_t> path_to(std::size_t node) const;

 private:
  std::size_t child_for(std::size_t parent, const Frame& f);
  void gather_members();

  GroupOptions::Granularity granularity_;
  std::vector<TrieNode> nodes_;
  // Wide nodes (many distinct callees) get a hash index; narrow ones are scanned.
  std::unordered_map<std::size_t, std::unordered_multimap<std::size_t, std::size_t>> wide_;
};

}  // namespace hangscan
