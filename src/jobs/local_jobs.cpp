#include "jobs/local_jobs.h"

#include <fmt/core.h>

#include <map>
#include <memory>

#include "discovery/discovery.h"
#include "target/live_target.h"
#include "util/diagnostic.h"

namespace hangscan {

LocalJob run_local_job(const LocalJobRequest& req) {
  LocalJob out;
  std::map<int, std::unique_ptr<Target>> opened;
  std::vector<int> good_pids;
  JobOptions run = req.run;
  if (!run.live) run.live = std::make_shared<LiveRunShared>();
  for (int pid : req.pids) {
    auto t = open_live_target(pid, req.run.capture.nonblocking, run.live);
    if (t) {
      good_pids.push_back(pid);
      opened[pid] = std::move(*t);
    } else {
      out.rejected.push_back({pid, t.error()});
    }
  }
  if (good_pids.empty() && req.match.empty()) return out;
  start_quiet_session(run.capture);  // loads while the processes are found

  DiscoveryOptions dopt;
  dopt.pids = good_pids;
  dopt.subprocesses = req.subprocesses;
  dopt.match = req.match;
  std::vector<Diagnostic> found;
  auto procs = discover(dopt, &found);
  if (!procs) {
    out.error = procs.error();
    return out;
  }
  std::vector<std::string>* log = req.run.capture.log;
  std::vector<JobMember> members;
  for (auto& dp : *procs) {
    if (log != nullptr) {
      log->push_back(fmt::format("pid {}: {}{}", dp.pid, dp.role,
                                 dp.reason.empty() ? "" : " (" + dp.reason + ")"));
    }
    JobMember m;
    if (auto it = opened.find(dp.pid); it != opened.end()) m.opened = std::move(it->second);
    m.process = std::move(dp);
    members.push_back(std::move(m));
  }
  opened.clear();  // explicit pids discovery left out (hangscan itself) are released here
  for (const auto& r : out.rejected) found.push_back(error_diagnostic(r.error, r.pid));
  SymbolCache symbols;
  out.job = run_job(members, run, symbols, std::move(found));
  out.ran = true;
  return out;
}

JobSnapshot run_core_job(const std::vector<std::string>& files, const JobOptions& options) {
  std::vector<JobMember> members;
  for (const auto& f : files) {
    JobMember m;
    m.core_file = f;
    members.push_back(std::move(m));
  }
  SymbolCache symbols;  // shared by every core: same build-ids, symbolized once
  return run_job(members, options, symbols);
}

}  // namespace hangscan
