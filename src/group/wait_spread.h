// Since when the members of a group have waited: the evidence timing adds to the stacks.
//
// Why: ranks of one group sit in the same collective; the one that arrived last (or the one
// every other waited for) is often the story of the hang. Each thread's blocked_s counts back
// from its own process's capture moment, so members are put on one time line through their
// wall-clock capture times (captured_at - blocked_s). Across nodes that time line is only as
// good as the nodes' clocks, which the sentence says. Timing names no suspect by itself.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "hangscan/model.h"

namespace hangscan {

struct Group;

// Members that stopped running within this many seconds of each other arrived together.
inline constexpr double kSameArrival_s = 0.1;  // NOLINT(readability-identifier-naming): seconds
struct Analysis;

struct WaitSpread {
  double longest_s = 0;   // the member blocked longest, counted back from the latest capture
  double shortest_s = 0;  // the member blocked shortest (it arrived last)
  std::size_t last = 0;   // process index of the member that arrived last
  std::size_t hosts = 1;  // distinct hosts among the members (clock skew applies when > 1)
  double spread_s() const { return longest_s - shortest_s; }
};

// The spread of a group's key threads, when every member (at least two) is blocked with a
// known time; nullopt otherwise (a running member, a core, an old agent).
std::optional<WaitSpread> wait_spread(const JobSnapshot& job, const Analysis& a, const Group& g);

}  // namespace hangscan
