// Forked workers that ended while the job was captured: left out of the job.
//
// Why: a parent that forks short-lived children (a fork storm, a pool whose tasks come and go)
// was reported as "20 processes are dead (state X)" with the live parent named suspect. A
// child that ended during the capture is not a death of the job: only one that is still a
// zombie afterwards counts. The rule needs /proc after the capture, so it is here, not in the
// analysis (which reads a snapshot only).
#pragma once

#include "hangscan/model.h"

namespace hangscan {

// Removes the workers (role "worker"/"idle": forked copies of their owner, proc/rank_info.h)
// that are gone, or were alive when captured and are zombies now, or were zombies and have
// been reaped since; adds one info diagnostic per owner saying how many ended. Ranks, plain
// processes and workers that are still what they were are kept.
void drop_vanished_workers(JobSnapshot& job);

}  // namespace hangscan
