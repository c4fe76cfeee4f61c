// Ranks grouped by what they did over a watch window, and the odd ones named, as `dump` does.
//
// Why: the question of a hung job is which rank is not where the others are. `dump` answers it
// for one instant from whole stacks; a watch window answers it from behaviour, and only from
// facts that do not move with sampling noise: a rank is *stuck* (one wait of half the window or
// more, still going at the end: where, from its system call and user stack, or its kernel stack
// when the recorder has no user stack of it), *ended* (how), or *active* (it ran and woke in the
// window; its busiest stacks are in its report, not in the key, since two healthy ranks rarely
// share their single most sampled stack). The verdict is group/analysis.h's, on those keys.
#pragma once

#include "watch/watch_report.h"

namespace hangscan {

// Fills r.groups, r.suspects and r.group_notes from r.processes (ranks only, or every process
// when none is a rank); nothing when fewer than two are grouped.
void group_watched(WatchReport& r);

}  // namespace hangscan
