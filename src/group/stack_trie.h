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

#include "group/stack_key.h"
#include "hangscan/model.h"

namespace hangscan {

struct TrieNode {
  Frame frame;                        // reduced to the key (key_frame_copy of the first member)
  bool uniform_line = true;           // every member through here has the frame's line
  std::size_t parent = 0;             // root: itself
  int depth = 0;                      // root 0, outermost frame 1
  std::vector<std::size_t> children;  // in insertion order
  std::vector<std::size_t> ending;    // members whose stack ends here (ascending, unique)
  std::size_t member_count = 0;       // members through this node (filled by finish())
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

  // Counts every node's members (the union of the endings below it) and settles which lines
  // are shown. Call once, after the last insert.
  void finish();

  // The process indexes through `node` (ascending, unique): the union of the endings below it.
  // Why computed on demand: stored per node it cost members x depth (6 M entries for 100,000
  // ranks of 60 frames); the endings are stored once per distinct stack, and only the writers
  // ask for a node's full list, for the nodes they print.
  std::vector<std::size_t> members(std::size_t node) const;

  const std::vector<TrieNode>& nodes() const { return nodes_; }
  const TrieNode& node(std::size_t i) const { return nodes_[i]; }
  GroupOptions::Granularity granularity() const { return granularity_; }

  // Path from the outermost frame down to `node` (root excluded).
  std::vector<std::size_t> path_to(std::size_t node) const;

 private:
  std::size_t child_for(std::size_t parent, const Frame& f);
  void credit(std::size_t member, std::size_t node);
  std::vector<std::size_t> endings_below(std::size_t node) const;

  // Whether some member ends on more than one node (several selected threads): then counts
  // need unions instead of sums.
  bool multi_ending_ = false;
  std::size_t last_member_ = static_cast<std::size_t>(-1);
  std::size_t last_node_ = 0;

  GroupOptions::Granularity granularity_;
  std::vector<TrieNode> nodes_;
  // Wide nodes (many distinct callees) get a hash index; narrow ones are scanned.
  std::unordered_map<std::size_t, std::unordered_multimap<std::size_t, std::size_t>> wide_;
};

}  // namespace hangscan
