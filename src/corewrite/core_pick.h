// pick_core_members(): which processes of a grouped job get a core.
//
// Why: a job of 512 identical ranks needs one core per distinct stack, not 512 cores of
// gigabytes each. One representative per group plus every suspect tells the whole story;
// `suspects` and `all` are there for tighter budgets and for when grouping is not trusted.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "group/analysis.h"
#include "hangscan/result.h"

namespace hangscan {

enum class GcoreMode { one_per_group, suspects, all };

// "one-per-group" | "suspects" | "all"; nullopt otherwise.
std::optional<GcoreMode> parse_gcore_mode(const std::string& text);

// Indexes into JobSnapshot::processes, ascending, without duplicates. `process_count` is the
// number of processes (for `all`). A group's representative is its first member (lowest rank).
std::vector<std::size_t> pick_core_members(const Analysis& analysis, GcoreMode mode,
                                           std::size_t process_count);

// Why a member was picked, for the line that reports its core: "suspect", "representative"
// (the first member of its group) or "member" (--gcore all).
const char* core_role(const Analysis& analysis, std::size_t process_index);

// The processes a --gcore mode picks from an analysis, with the role of each ("suspect",
// "representative", "member") for the line that reports its core.
struct PickedCores {
  std::vector<std::size_t> members;  // indexes into the job's processes
  std::vector<std::string> roles;
};
// `mode` as given to --gcore ("" = one-per-group); Errc::usage when it is not a mode.
Result<PickedCores> pick_cores(const Analysis& analysis, const std::string& mode,
                               std::size_t process_count);

}  // namespace hangscan
