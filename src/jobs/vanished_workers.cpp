#include "jobs/vanished_workers.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

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

}  // namespace

void drop_vanished_workers(JobSnapshot& job) {
  std::map<int, std::size_t> ended;  // owner pid -> workers left out
  auto gone = [&](const ProcessSnapshot& p) {
    if (!is_worker(p) || !ended_since(p)) return false;
    ++ended[p.ppid];
    return true;
  };
  job.processes.erase(std::remove_if(job.processes.begin(), job.processes.end(), gone),
                      job.processes.end());
  for (const auto& [owner, count] : ended) {
    job.diagnostics.push_back(make_diagnostic(
        Diagnostic::Severity::info,
        fmt::format("{} forked worker{} of pid {} ended during the capture: left out", count,
                    count == 1 ? "" : "s", owner),
        {}, owner));
  }
}

}  // namespace hangscan
