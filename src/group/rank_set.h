// RankSet: a sorted set of ranks with the compressed "0-6,8-15" rendering.
//
// Why: a job of 100,000 ranks cannot be reported rank by rank. Every writer (text tree, DOT
// edges, suspect sentences) and the CLI (`--ranks 0-3,8`) speak compressed ranges, so the
// rendering and its parser live in one place and round-trip exactly.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "hangscan/result.h"

namespace hangscan {

class RankSet {
 public:
  RankSet() = default;
  // Takes any order, duplicates allowed.
  explicit RankSet(std::vector<int> ranks);

  // Adds one rank. Cheap when ranks arrive in increasing order (the usual case).
  void insert(int rank);
  // Adds every rank of `other`.
  void insert_all(const RankSet& other);
  bool contains(int rank) const;
  std::size_t size() const { return ranks_.size(); }
  bool empty() const { return ranks_.empty(); }
  const std::vector<int>& values() const { return ranks_; }

  // "0-6,8-15"; "" for the empty set. Negative ranks render as "-3" and ranges as "-3--1".
  std::string to_string() const;

  // Parses what to_string() writes (and spaces around items): "0-6, 8-15", "3", "".
  // Rejects reversed ranges, garbage and sets larger than max_size with Errc::usage.
  static Result<RankSet> parse(std::string_view text, std::size_t max_size = 1u << 24);

  bool operator==(const RankSet&) const = default;

 private:
  void normalize();
  std::vector<int> ranks_;  // sorted, unique
  bool sorted_ = true;
};

// Renders any list of ints as compressed ranges without building a RankSet.
std::string compress_ranges(const std::vector<int>& sorted_unique);

}  // namespace hangscan
