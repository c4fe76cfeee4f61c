// `hangscan watch --slurm-job ID`: the recorder on every node of a Slurm job, merged.
//
// Why its own file: the front end's flags map to a ClusterWatchRequest (watchdog/
// cluster_session.h, where the fan-out and the watchdog live); this file prints what it says.
#pragma once

#include <string>
#include <vector>

#include "watchdog/cluster_session.h"

namespace hangscan::cli {

struct WatchSlurmOutput {
  std::string format = "text";    // --format / --json: the merged report on stdout
  std::string html_file;          // --html FILE: the page too
  std::vector<std::string> logs;  // --logs: joined with the bundle's capture
  bool job_logs = false;          // --job-logs: the job's StdOut/StdErr too (slurm_job_logs.h)
};

// The window across the nodes, merged; with `request.stall`, the watchdog. Returns the exit
// code.
int run_watch_slurm(ClusterWatchRequest request, const WatchSlurmOutput& output);

}  // namespace hangscan::cli
