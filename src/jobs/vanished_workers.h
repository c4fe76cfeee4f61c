// Forked workers that ended while the job was captured: left out of the job.
//
// Why: a parent that forks short-lived children (a fork storm, a pool whose tasks come and go)
// was reported as "20 processes are dead (state X)" with the live parent named suspect. A
// child that ended during the capture is not a death of the job: only one that is still a
// zombie afterwards counts, and only when it did not exit with code 0: a worker that finished
// its work and exited cleanly (a pool's workers at shutdown while their owner joins a stuck
// sibling first) is no more a death than one already reaped. The rule needs /proc after the
// capture, so it is here, not in the analysis (which reads a snapshot only).
#pragma once

#include "hangscan/model.h"

namespace hangscan {

// Removes the workers (role "worker"/"idle": forked copies of their owner, proc/rank_info.h)
// that are gone, or were alive when captured and are zombies now, or were zombies and have
// been reaped since, or are zombies that exited with code 0 beside their live owner in the
// job (a zombie asked for by itself is still reported as one); adds one info diagnostic per
// owner and kind saying how many left. Ranks, plain processes, live workers and zombies that
// exited otherwise (a signal, a non-zero code) are kept.
void drop_vanished_workers(JobSnapshot& job);

}  // namespace hangscan
