// The cores --gcore asks for, as data: which processes of a grouped job get one (and why), and
// what became of each.
//
// Why: `dump --gcore`, the bundles of `watch --stall` and the cluster core round
// (fanout/cluster_cores.h) all pick and report cores the same way; the picking and writing are
// library calls that return JobCores, and the CLI only words them (one line per core).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "corewrite/core_request.h"
#include "group/analysis.h"
#include "hangscan/model.h"
#include "hangscan/result.h"

namespace hangscan {

// What --gcore asks: the mode as given ("" = one-per-group), the directory and the size cap.
struct JobCoresRequest {
  std::string mode;
  std::string dir = ".";
  std::uint64_t max_size = 256ull << 20;
};

// The outcome of every picked process, in the order picked, with why each was picked
// ("suspect", "representative", "member"). The cluster round adds what its agents said.
struct JobCores {
  std::vector<CoreOutcome> outcomes;
  std::vector<std::string> roles;       // per outcome
  std::vector<Diagnostic> diagnostics;  // the round's run problems (cluster)
  std::vector<std::string> log;         // the round's commands and timing (cluster, --verbose)
  std::string dir;                      // where the cores went, as the writers saw it
  std::size_t nodes = 0;                // nodes of the round (cluster)
  std::chrono::milliseconds elapsed{0};
  std::size_t written() const;
};

// The cores of `job` (captured on this machine) that `request` picks from `analysis`, written
// here; a pid reused since the capture is refused. Errc::usage when the mode is not one.
Result<JobCores> write_job_cores(const JobSnapshot& job, const Analysis& analysis,
                                 const JobCoresRequest& request);

}  // namespace hangscan
