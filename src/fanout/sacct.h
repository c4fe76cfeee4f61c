// Slurm's view of how a job's steps ended (sacct), next to what the nodes saw.
//
// Why: when a rank dies, Slurm records the step's end: OUT_OF_MEMORY (its cgroup's OOM
// killer), TIMEOUT, NODE_FAIL, CANCELLED (by whom), FAILED with an exit code or signal. That
// record survives the processes and the kernel log's ring; the front end reads it once per
// report (sacct asks slurmdbd, not the nodes) and joins it to the deaths by node. Parsers take
// sacct's text, so they are tested on its real output; without accounting there is nothing to
// join and nothing fails.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hangscan/model.h"

namespace hangscan {

// One line of `sacct -j J -P -n -X`-less output: -o JobID,State,ExitCode,NodeList.
struct SlurmStepRecord {
  std::string step;                // "42", "42.batch", "42.0"
  std::string state;               // "OUT_OF_MEMORY", "CANCELLED by 0", "FAILED", "RUNNING"
  std::string exit_code;           // "0:125": exit code, then the signal that ended it
  std::string nodelist;            // "n[1-3]"
  std::vector<std::string> nodes;  // expanded (empty when the list cannot be)
};

// The argv of the sacct call parse_sacct reads.
std::vector<std::string> sacct_argv(const std::string& sacct, const std::string& job_id);

// `sacct -P -n -o JobID,State,ExitCode,NodeList` -> records (malformed lines skipped).
std::vector<SlurmStepRecord> parse_sacct(std::string_view text);

// StartTime=2026-11-24T04:50:01 of `scontrol show job` as Unix seconds (local time, as Slurm
// prints it); nullopt when absent or "Unknown".
std::optional<double> parse_start_time(std::string_view scontrol_show_job);

// A step that ended badly: not RUNNING, PENDING, COMPLETING or COMPLETED with 0:0. The job's
// own line and its batch/extern steps are not the ranks' steps.
bool step_failed(const SlurmStepRecord& r);

// Joins sacct's records to the job's deaths: every death on a node of exactly one failed
// step gets that step's record; a failed step with no death on its nodes becomes a death of its
// own (how "slurm", evidence "sacct"), so a rank whose node kept nothing is still explained.
void join_slurm_records(JobSnapshot& job, const std::vector<SlurmStepRecord>& records);

}  // namespace hangscan
