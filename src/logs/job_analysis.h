// A job's analysis as a caller asks for it: the grouping options checked, the job grouped, and
// its logs (`--logs`, logs the caller read) joined with the verdict, all as data.
//
// Why in the library: dump, core, the cluster capture and the watchdog's bundles all end with
// this analysis; here none of them needs a hook from the CLI for it, and nothing here prints (a
// bad option is an Error with its hint, a log that could not be read is a LogProblem) so the
// front end words and prints each alike.
#pragma once

#include <string>
#include <vector>

#include "group/analysis.h"
#include "hangscan/model.h"
#include "hangscan/result.h"
#include "logs/log_reader.h"

namespace hangscan {

// The logs joined with a capture: named (files, directories, globs, .gz) and read by the caller
// (Slurm's output files with the job's user's rights, the pods' logs).
struct JobLogs {
  std::vector<std::string> paths;
  std::vector<LogText> texts;
  bool empty() const { return paths.empty() && texts.empty(); }
};

// One log that could not be read (whole or in part): its path as given or found, and why.
struct LogProblem {
  std::string path;
  std::string error;
  bool operator==(const LogProblem&) const = default;
};

// Errc::usage with a hint when `g` cannot group (matching without a regex, a bad or an over-long
// regex). Why apart: the front ends check their flags with it before anything is captured.
Status check_group_options(const GroupOptions& g);

// The job grouped as `g` says (check_group_options first: its error, else the analysis).
Result<Analysis> analyze_job(const JobSnapshot& job, const GroupOptions& g);

// Reads `logs`, puts each rank's last line beside its stack in `analysis` (last_logs, the
// launcher's stops, the suspects' log sentences) and returns each log it could not read, in the
// order read. Nothing when `logs` is empty.
std::vector<LogProblem> join_job_logs(const JobSnapshot& job, Analysis& analysis,
                                      const JobLogs& logs);

}  // namespace hangscan
