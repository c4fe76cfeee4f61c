// Stack trie construction.
#include "group/stack_trie.h"

#include <algorithm>
#include <iterator>
#include <limits>

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

// Members are credited where their stacks end; finish() gives every node the union of the
// endings below it (100,000 members on 60-frame paths were 6 M appends, one at a time).
std::size_t StackTrie::insert(std::size_t member, FrameRange stack) {
  std::size_t node = kRoot;
  for (const Frame* f = stack.end; f != stack.begin;) {
    --f;
    node = child_for(node, *f);
    TrieNode& n = nodes_[node];
    if (n.uniform_line && n.frame.line != f->line) n.uniform_line = false;
  }
  add_member(nodes_[node].ending, member);
  return node;
}

void StackTrie::insert_again(std::size_t member, std::size_t node) {
  add_member(nodes_[node].ending, member);
}

void StackTrie::gather_members() {
  // A child is always made after its parent: going down the ids, every child is done first.
  std::vector<std::size_t> merged;
  for (std::size_t i = nodes_.size(); i-- > 0;) {
    TrieNode& n = nodes_[i];
    n.members = n.ending;
    for (std::size_t c : n.children) {
      const std::vector<std::size_t>& below = nodes_[c].members;
      if (n.members.empty()) {
        n.members = below;
        continue;
      }
      merged.clear();
      merged.reserve(n.members.size() + below.size());
      std::set_union(n.members.begin(), n.members.end(), below.begin(), below.end(),
                     std::back_inserter(merged));
      n.members.swap(merged);
    }
  }
}

void StackTrie::finish(const std::vector<ProcessSnapshot>& processes) {
  gather_members();
  // Ranks gathered once: walking members of every node through ProcessSnapshot misses cache.
  constexpr int kNoRank = std::numeric_limits<int>::min();
  std::vector<int> rank_of(processes.size(), kNoRank);
  for (std::size_t i = 0; i < processes.size(); ++i)
    rank_of[i] = processes[i].rank.value_or(kNoRank);
  std::vector<int> ranks;
  for (TrieNode& n : nodes_) {
    ranks.clear();
    for (std::size_t m : n.members) {
      if (m < rank_of.size() && rank_of[m] != kNoRank) ranks.push_back(rank_of[m]);
    }
    n.ranks = RankSet(ranks);
    if (!n.uniform_line) n.frame.line.reset();
  }
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
