// Stack trie construction.
#include "group/stack_trie.h"

#include <algorithm>
#include <iterator>

namespace hangscan {

namespace {
constexpr std::size_t kScanLimit = 16;  // children scanned linearly before a hash index is built

void add_member(std::vector<std::size_t>& v, std::size_t member) {
  if (v.empty() || v.back() != member) v.push_back(member);
}
}  // namespace

StackTrie::StackTrie(GroupOptions::Granularity g) : granularity_(g) {
  TrieNode root;
  root.frame.function = "";
  nodes_.push_back(std::move(root));
}

std::size_t StackTrie::child_for(std::size_t parent, const Frame& f) {
  auto wide = wide_.find(parent);
  if (wide != wide_.end()) {
    auto [lo, hi] = wide->second.equal_range(key_frame_hash(f, granularity_));
    for (auto it = lo; it != hi; ++it) {
      if (same_key_frame(nodes_[it->second].frame, f, granularity_)) return it->second;
    }
  } else {
    for (std::size_t c : nodes_[parent].children) {
      if (same_key_frame(nodes_[c].frame, f, granularity_)) return c;
    }
  }
  TrieNode n;
  n.frame = key_frame_copy(f, granularity_);
  n.frame.line = f.line;  // shown while every member agrees (uniform_line)
  n.parent = parent;
  n.depth = nodes_[parent].depth + 1;
  std::size_t id = nodes_.size();
  nodes_.push_back(std::move(n));
  auto& kids = nodes_[parent].children;
  kids.push_back(id);
  if (kids.size() == kScanLimit + 1) {
    auto& index = wide_[parent];
    for (std::size_t c : kids) index.emplace(key_frame_hash(nodes_[c].frame, granularity_), c);
  } else if (kids.size() > kScanLimit + 1) {
    wide_[parent].emplace(key_frame_hash(f, granularity_), id);
  }
  return id;
}

// Members are credited where their stacks end, once per distinct stack's end node; a node's
// members are the union of the endings below it, counted by finish() and listed on demand.
std::size_t StackTrie::insert(std::size_t member, FrameRange stack) {
  std::size_t node = kRoot;
  for (const Frame* f = stack.end; f != stack.begin;) {
    --f;
    node = child_for(node, *f);
    TrieNode& n = nodes_[node];
    if (n.uniform_line && n.frame.line != f->line) n.uniform_line = false;
  }
  credit(member, node);
  return node;
}

void StackTrie::insert_again(std::size_t member, std::size_t node) { credit(member, node); }

void StackTrie::credit(std::size_t member, std::size_t node) {
  if (member == last_member_ && node != last_node_) multi_ending_ = true;
  last_member_ = member;
  last_node_ = node;
  add_member(nodes_[node].ending, member);
}

void StackTrie::finish() {
  // A child is always made after its parent: going down the ids, every child is done first.
  for (std::size_t i = nodes_.size(); i-- > 0;) {
    TrieNode& n = nodes_[i];
    if (!n.uniform_line) n.frame.line.reset();
    if (multi_ending_) {
      n.member_count = members(i).size();
      continue;
    }
    // Each member ends on one node only: the sets below are disjoint.
    n.member_count = n.ending.size();
    for (std::size_t c : n.children) n.member_count += nodes_[c].member_count;
  }
}

std::vector<std::size_t> StackTrie::endings_below(std::size_t node) const {
  std::vector<std::size_t> out, todo = {node};
  while (!todo.empty()) {
    std::size_t n = todo.back();
    todo.pop_back();
    if (!nodes_[n].ending.empty()) out.push_back(n);
    todo.insert(todo.end(), nodes_[n].children.begin(), nodes_[n].children.end());
  }
  return out;
}

std::vector<std::size_t> StackTrie::members(std::size_t node) const {
  std::vector<std::size_t> ends = endings_below(node);
  if (ends.size() == 1) return nodes_[ends.front()].ending;
  std::size_t total = 0;
  for (std::size_t e : ends) total += nodes_[e].ending.size();
  std::vector<std::size_t> out;
  out.reserve(total);
  // Each ending is sorted: below a few distinct stacks, merging them one by one is linear per
  // list (sorting 100,000 members again for each printed node was not); below many, one sort.
  constexpr std::size_t kMergeLimit = 8;
  for (std::size_t e : ends) {
    auto middle = static_cast<std::ptrdiff_t>(out.size());
    out.insert(out.end(), nodes_[e].ending.begin(), nodes_[e].ending.end());
    if (ends.size() <= kMergeLimit)
      std::inplace_merge(out.begin(), out.begin() + middle, out.end());
  }
  if (ends.size() > kMergeLimit) std::sort(out.begin(), out.end());
  if (multi_ending_) out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::size_t> StackTrie::path_to(std::size_t node) const {
  std::vector<std::size_t> path;
  while (node != kRoot && node < nodes_.size()) {
    path.push_back(node);
    node = nodes_[node].parent;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace hangscan
