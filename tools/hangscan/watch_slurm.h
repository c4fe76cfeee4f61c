// `hangscan watch --slurm-job ID`: the recorder on every node of a Slurm job, merged.
//
// Why its own file: the front end is a fan-out (srun --overlap, one long-lived node-local
// `watch` per node, framed answers as `hangscan --slurm-job` reads them), with SIGINT/SIGTERM
// forwarded to srun so the nodes end their window early and still report.
#pragma once

#include <string>
#include <vector>

namespace hangscan::cli {

struct WatchSlurmRequest {
  std::string job_id;
  double seconds = 10;
  int rate = 19;
  int wait_ms = 10;
  bool json = false;
  double stall = 0;        // > 0: the watchdog across the nodes (until stopped)
  std::string log_file;    // --log: also a stall when it was not written for `stall` s
  std::string output_dir;  // where stall bundles go
  bool once = false;
  std::vector<std::string> logs;  // --logs: joined with the bundle's capture
  bool job_logs = false;          // --job-logs: the job's StdOut/StdErr too (slurm_job_logs.h)
};

// The window across the nodes, merged; with `stall`, the watchdog (below).
int run_watch_slurm(const WatchSlurmRequest& request);

// The watchdog across the nodes (docs/watch.md): each node's recorder judges its own ranks'
// progress and reports when they made none for `stall` s; the job is stalled when every node
// has (or --log went stale: the nodes are told to report). The bundle is the capture of every
// node (as `hangscan --slurm-job`) with the nodes' merged timeline. Then it watches again.
int run_watch_slurm_stall(const WatchSlurmRequest& request);

}  // namespace hangscan::cli
