// `hangscan watch --slurm-job ID` (and the printing of every cluster watch): the request to
// the library (watchdog/cluster_session.h) and what it says, printed. See watch_slurm.h.
#include <fmt/core.h>

#include <cstdio>

#include "cli.h"
#include "fanout_cli.h"
#include "output.h"
#include "stall_bundle.h"
#include "stop_signals.h"
#include "watch/watch_writers.h"
#include "watch_slurm.h"

namespace hangscan::cli {

namespace {

int job_error(const Error& e) {
  print_error(e);
  return e.code == Errc::usage ? kExitUsage : kExitNothing;
}

// The merged window on stdout (and --html FILE); the exit code.
int write_window(const WatchDocument& merged, const WatchSlurmOutput& out) {
  auto w = find_watch_writer(out.format);
  if (!w || !write_stdout(w->render(merged))) return kExitNothing;
  if (!out.html_file.empty() &&
      !write_page_file(find_watch_writer("html")->render(merged), out.html_file))
    return kExitNothing;
  if (merged.json["processes"].empty()) return kExitNothing;
  return merged.json["unreachable"].empty() ? kExitComplete : kExitPartial;
}

}  // namespace

int run_watch_nodes(NodeWatchFanout& fanout, ClusterWatchRequest r, const WatchSlurmOutput& out,
                    ClusterWatchHooks hooks) {
  auto g = group_options(OutputOptions{});
  if (g) r.group = *g;
  r.logs.paths = out.logs;
  hooks.unread_logs = print_log_problems;
  hooks.job_log_problems = print_errors;
  StopSignals stop;  // before the threads: they inherit the block, the signals come to us
  hooks.stop_fd = stop.fd();
  hooks.stop_pending = [&stop] { return stop.pending(); };
  if (r.stall <= 0) {
    auto merged = run_cluster_watch(fanout, r, hooks);
    return merged ? write_window(*merged, out) : job_error(merged.error());
  }
  hooks.stalled = print_stall;
  auto end = run_cluster_watchdog(fanout, r, hooks);
  if (!end) return job_error(end.error());
  if (*end == ClusterWatchdogEnd::every_rank_ended)
    fmt::print(stderr, "hangscan: every rank of {} ended; the watchdog stops\n", out.job_name);
  return kExitComplete;
}

int run_watch_slurm(const std::string& job_id, ClusterWatchRequest r, const WatchSlurmOutput& out) {
  auto agent = resolve_agent_path("");
  if (!agent) return job_error(agent.error());
  auto fanout = make_slurm_node_watches(job_id, *agent);
  ClusterWatchHooks hooks;
  hooks.started = [&r](const LaunchPlan& job) {
    std::string nodes =
        fmt::format("{} node{}", job.nodes.size(), job.nodes.size() == 1 ? "" : "s");
    if (r.stall > 0) {
      fmt::print(
          stderr,
          "hangscan: watchdog on job {} ({}: {}): fires when no rank on any node made "
          "progress for {} s{}\n",
          job.job_id, nodes, job.description, r.stall,
          r.log_file.empty() ? "" : fmt::format(" or {} was not written for as long", r.log_file));
    } else {
      fmt::print(stderr,
                 "hangscan: watching job {} on {} ({}) for {} s; SIGINT ends every node's "
                 "window and reports\n",
                 job.job_id, nodes, job.description, r.seconds);
    }
    std::fflush(stderr);
  };
  // --job-logs: the job's own output files, read as its user when a bundle is made.
  if (out.job_logs) r.job_logs_of = job_id;
  WatchSlurmOutput named = out;
  named.job_name = "job " + job_id;
  return run_watch_nodes(*fanout, std::move(r), named, std::move(hooks));
}

}  // namespace hangscan::cli
