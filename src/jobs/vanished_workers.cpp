#include "jobs/vanished_workers.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "proc/deaths.h"
#include "proc/proc_files.h"
#include "proc/rank_info.h"
#include "util/diagnostic.h"

namespace hangscan {

namespace {

bool is_worker(const ProcessSnapshot& p) {
  return !p.core && (p.role == kRoleWorker || p.role == kRoleIdle);
}

// The process is no longer what the capture saw: gone, its pid reused, or (alive or a zombie
// then) ended or reaped since.
bool ended_since(const ProcessSnapshot& p) {
  if (p.state == 'X') return true;
  auto now = read_stat(p.pid);
  if (!now) return true;
  if (p.start_ticks != 0 && now->start_time != p.start_ticks) return true;
  return now->state == 'Z' && p.state != 'Z';
}

// A zombie now whose wait status is 0: it finished its work and exited with code 0 (a pool's
// worker at shutdown, a Process whose parent joins another sibling first); not a death.
bool exited_cleanly(const ProcessSnapshot& p) {
  auto text = read_text_file(fmt::format("/proc/{}/stat", p.pid), 4096);
  if (!text) return false;
  auto now = parse_stat(*text);
  if (!now || now->state != 'Z') return false;
  if (p.start_ticks != 0 && now->start_time != p.start_ticks) return false;
  return parse_stat_exit_code(*text) == 0;
}

void tell(JobSnapshot& job, const std::map<int, std::size_t>& by_owner, const char* what) {
  for (const auto& [owner, count] : by_owner) {
    job.diagnostics.push_back(
        make_diagnostic(Diagnostic::Severity::info,
                        fmt::format("{} forked worker{} of pid {} {}: left out", count,
                                    count == 1 ? "" : "s", owner, what),
                        {}, owner));
  }
}

}  // namespace

void drop_vanished_workers(JobSnapshot& job) {
  std::map<int, std::size_t> ended, finished;  // owner pid -> workers left out
  // A clean exit is left out beside its owner (a pool's shutdown); a zombie asked for by
  // itself is still said to be one.
  std::set<int> owners;
  for (const ProcessSnapshot& p : job.processes) {
    if (p.state != 'Z' && p.state != 'X') owners.insert(p.pid);
  }
  auto gone = [&](const ProcessSnapshot& p) {
    if (!is_worker(p)) return false;
    if (ended_since(p)) ++ended[p.ppid];
    else if (owners.count(p.ppid) && exited_cleanly(p)) ++finished[p.ppid];
    else return false;
    return true;
  };
  job.processes.erase(std::remove_if(job.processes.begin(), job.processes.end(), gone),
                      job.processes.end());
  tell(job, ended, "ended during the capture");
  tell(job, finished, "exited with code 0 (not reaped yet)");
}

}  // namespace hangscan
