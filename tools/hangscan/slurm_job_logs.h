// `--slurm-job ID --job-logs`: the job's own output files, as Slurm names them.
//
// Why: a batch job's StdOut/StdErr (slurm-%j.out by default) holds what srun and slurmstepd said
// about the job (killed tasks, time limits, OOM kills) and, with srun --label, every rank's lines.
// The job's owner chooses these paths and hangscan often runs as root, so each file is read with
// the job's user's file rights (proc/target_file.h), never hangscan's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "logs/log_reader.h"

namespace hangscan::cli {

// What `scontrol show job` says of the job's output: its user and group ids and the paths.
struct JobOutputFields {
  std::optional<unsigned> uid;
  std::optional<unsigned> gid;
  std::vector<std::string> paths;  // StdOut, then StdErr when it differs
};
JobOutputFields parse_job_output_fields(std::string_view scontrol_show_job);

// The job's StdOut and StdErr read as its user (bounded); a file that could not be read is a
// LogText with its error. Empty (and the reason printed) when scontrol does not answer.
std::vector<LogText> slurm_job_output_logs(const std::string& job_id);

}  // namespace hangscan::cli
