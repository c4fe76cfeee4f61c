// Internal to src/group: one suspect sentence per dead or missing rank, saying how it died.
//
// Why: a dead rank used to yield three findings (a minority with no stack, a zombie state, a
// missing rank) and never the cause. The deaths a node found (Death: exit status, kernel log)
// are linked to ranks here, where the evidence allows: a zombie without environment is the
// missing rank when it is the only dead process and that the only missing rank; a reaped death
// from the kernel log likewise. Every finding made here is left out of the other rules.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "group/analysis.h"

namespace hangscan {

struct DeathFindings {
  std::set<std::size_t> members;  // process indexes explained (no state/minority sentence)
  std::set<int> ranks;            // missing ranks explained (no "is missing" sentence)
};

// Adds one finding per death to a.findings and the dead members to `flagged`.
// a.missing_ranks must be known.
DeathFindings death_findings(const JobSnapshot& job, Analysis& a,
                             std::vector<std::size_t>& flagged);

}  // namespace hangscan
