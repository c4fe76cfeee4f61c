#include "logs/job_analysis.h"

#include <fmt/core.h>

#include <utility>

#include "logs/log_join.h"
#include "logs/log_verdict.h"
#include "logs/log_writers.h"
#include "util/pattern.h"

namespace hangscan {

Status check_group_options(const GroupOptions& g) {
  if (g.threads == GroupOptions::Threads::matching && g.thread_regex.size() > kMaxPatternLength) {
    return Error(Errc::usage,
                 fmt::format("--thread-regex is {} characters long; at most {} are accepted",
                             g.thread_regex.size(), kMaxPatternLength),
                 0, "thread names have 15 characters at most: a short pattern matches them");
  }
  auto st = validate_group_options(g);
  if (st) return st;
  Error e = std::move(st).error();
  if (e.hint.empty()) {
    e.hint = g.thread_regex.empty()
                 ? "add --thread-regex REGEX, e.g. --threads matching --thread-regex 'pt_main|gloo'"
                 : "--thread-regex is an ECMAScript regular expression over thread names, e.g. "
                   "'pt_main|gloo'";
  }
  return e;
}

Result<Analysis> analyze_job(const JobSnapshot& job, const GroupOptions& g) {
  if (auto st = check_group_options(g); !st) return st.error();
  return analyze(job, g);
}

std::vector<LogProblem> join_job_logs(const JobSnapshot& job, Analysis& analysis,
                                      const JobLogs& logs) {
  std::vector<LogProblem> problems;
  if (logs.empty()) return problems;
  LogSet read = read_logs(logs.paths, {}, logs.texts);
  for (const LogFile& f : read.files) {
    if (!f.error.empty()) problems.push_back({f.path, f.error});
  }
  ranks_from_capture(read, job);
  LogFindings findings = analyze_logs(read, analysis.world_size);
  analysis.last_logs = join_logs(read, job);
  ranks_of_deaths(read, analysis);
  mark_launcher_stops(read, job, analysis);
  add_log_sentences(read, findings, analysis);
  return problems;
}

}  // namespace hangscan
