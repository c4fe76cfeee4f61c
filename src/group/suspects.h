// Internal to src/group: the suspect finder analyze() runs after grouping.
//
// Why separate: naming suspects (majority descent over the trie, process states, missing
// ranks) is its own set of rules with its own sentences; keeping it out of the grouping code
// keeps each readable and lets the rules change without touching how groups are built.
#pragma once

#include "group/analysis.h"

namespace hangscan {

// Fills a.suspects, a.findings, a.missing_ranks, a.suspect_members, a.note_findings,
// a.world_size and Group::suspect. a.groups, a.trie and a.grouped must be final.
void find_suspects(const JobSnapshot& job, Analysis& a);

// Above this a world size is treated as hostile/garbage and missing ranks are not listed.
inline constexpr int kMaxWorldSize = 1 << 22;

}  // namespace hangscan
