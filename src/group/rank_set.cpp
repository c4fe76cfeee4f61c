// RankSet storage, rendering and parsing.
#include "group/rank_set.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "util/parse_number.h"

namespace hangscan {

RankSet::RankSet(std::vector<int> ranks) : ranks_(std::move(ranks)), sorted_(false) { normalize(); }

void RankSet::normalize() {
  if (sorted_) return;
  // Ranks usually arrive in order (members are walked by process index): skip the sort then.
  if (!std::is_sorted(ranks_.begin(), ranks_.end())) std::sort(ranks_.begin(), ranks_.end());
  ranks_.erase(std::unique(ranks_.begin(), ranks_.end()), ranks_.end());
  sorted_ = true;
}

void RankSet::insert(int rank) {
  if (ranks_.empty() || rank > ranks_.back()) {
    ranks_.push_back(rank);
    return;
  }
  auto it = std::lower_bound(ranks_.begin(), ranks_.end(), rank);
  if (it == ranks_.end() || *it != rank) ranks_.insert(it, rank);
}

void RankSet::insert_all(const RankSet& other) {
  if (other.empty()) return;
  if (ranks_.empty() || other.ranks_.front() > ranks_.back()) {
    ranks_.insert(ranks_.end(), other.ranks_.begin(), other.ranks_.end());
    return;
  }
  std::vector<int> merged;
  merged.reserve(ranks_.size() + other.ranks_.size());
  std::set_union(ranks_.begin(), ranks_.end(), other.ranks_.begin(), other.ranks_.end(),
                 std::back_inserter(merged));
  ranks_ = std::move(merged);
}

bool RankSet::contains(int rank) const {
  return std::binary_search(ranks_.begin(), ranks_.end(), rank);
}

std::string compress_ranges(const std::vector<int>& sorted_unique) {
  std::string out;
  std::size_t i = 0;
  while (i < sorted_unique.size()) {
    std::size_t j = i;
    while (j + 1 < sorted_unique.size() && static_cast<long long>(sorted_unique[j + 1]) ==
                                               static_cast<long long>(sorted_unique[j]) + 1) {
      ++j;
    }
    if (!out.empty()) out += ',';
    if (j == i) {
      out += fmt::format("{}", sorted_unique[i]);
    } else {
      out += fmt::format("{}-{}", sorted_unique[i], sorted_unique[j]);
    }
    i = j + 1;
  }
  return out;
}

std::string RankSet::to_string() const { return compress_ranges(ranks_); }

namespace {

// Reads one (possibly negative) integer from the front of `s`.
bool read_int(std::string_view& s, int& out) {
  auto v = take_int<int>(s);
  if (v) out = *v;
  return v.has_value();
}

}  // namespace

Result<RankSet> RankSet::parse(std::string_view text, std::size_t max_size) {
  RankSet set;
  std::string_view rest = trim_space(text);
  if (rest.empty()) return set;
  std::vector<int> out;
  while (true) {
    std::size_t comma = rest.find(',');
    std::string_view item = trim_space(rest.substr(0, comma));
    std::string_view cursor = item;
    int lo = 0;
    if (!read_int(cursor, lo)) {
      return Error(Errc::usage, fmt::format("rank list \"{}\": \"{}\" is not a rank", text, item));
    }
    int hi = lo;
    if (!cursor.empty()) {
      if (cursor.front() != '-') {
        return Error(Errc::usage,
                     fmt::format("rank list \"{}\": \"{}\" is not a rank", text, item));
      }
      cursor.remove_prefix(1);
      if (!read_int(cursor, hi) || !cursor.empty()) {
        return Error(Errc::usage,
                     fmt::format("rank list \"{}\": \"{}\" is not a range", text, item));
      }
      if (hi < lo) {
        return Error(Errc::usage,
                     fmt::format("rank list \"{}\": range \"{}\" is reversed", text, item));
      }
    }
    std::size_t count = static_cast<std::size_t>(static_cast<long long>(hi) - lo) + 1;
    if (count > max_size || out.size() + count > max_size) {
      return Error(Errc::usage,
                   fmt::format("rank list \"{}\" has more than {} ranks", text, max_size));
    }
    for (long long r = lo; r <= hi; ++r) out.push_back(static_cast<int>(r));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return RankSet(std::move(out));
}

}  // namespace hangscan
