// The jobs of this machine: `dump` (live processes) and `core` (core files), each one call.
//
// Why: the CLI parses flags into these requests and prints what comes back; choosing the
// targets (explicit pids checked first, then discovery) and running them through run_job()
// is library work, shared with the node agent's loop.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hangscan/model.h"
#include "hangscan/result.h"
#include "jobs/job_loop.h"

namespace hangscan {

struct LocalJobRequest {
  std::vector<int> pids;      // --pid
  bool subprocesses = false;  // --subprocesses
  std::string match;          // --match REGEX
  JobOptions run;             // capture, samples; capture.log gets discovery's --verbose lines
};

struct LocalJob {
  // Explicit pids that could not be opened (no such process, zombie, kernel thread, already
  // traced, permission), in the order given: each also a diagnostic of `job`.
  struct Rejected {
    int pid = 0;
    Error error;
  };
  std::vector<Rejected> rejected;
  // Discovery failed (Errc::usage for a bad pattern): nothing was captured.
  std::optional<Error> error;
  // False when nothing was left to capture (every --pid rejected, no --match) or on `error`.
  bool ran = false;
  JobSnapshot job;
};

// Checks the explicit pids (each opened once, and that open target is the one captured),
// discovers, captures, adds the node's deaths. Never throws.
LocalJob run_local_job(const LocalJobRequest& request);

// Reads every core with one SymbolCache (the same build-ids are symbolized once), in order.
// A core that cannot be read is an error diagnostic of the job. Never throws.
JobSnapshot run_core_job(const std::vector<std::string>& files, const JobOptions& options);

}  // namespace hangscan
