#include "corewrite/job_cores.h"

#include <algorithm>

#include "corewrite/core_pick.h"
#include "corewrite/member_core.h"

namespace hangscan {

std::size_t JobCores::written() const {
  return static_cast<std::size_t>(std::count_if(outcomes.begin(), outcomes.end(),
                                                [](const CoreOutcome& c) { return c.written(); }));
}

Result<JobCores> write_job_cores(const JobSnapshot& job, const Analysis& analysis,
                                 const JobCoresRequest& request) {
  auto picked = pick_cores(analysis, request.mode, job.processes.size());
  if (!picked) return picked.error();
  JobCores out;
  out.dir = request.dir;
  out.roles = picked->roles;
  out.outcomes = write_local_cores(job, *picked, request.dir, request.max_size);
  return out;
}

}  // namespace hangscan
