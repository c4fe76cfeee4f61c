// `hangscan watch --slurm-job ID`: the recorder on every node of a Slurm job, merged.
//
// Why its own file: the front end is a fan-out (srun --overlap, one long-lived node-local
// `watch` per node, framed answers as `hangscan --slurm-job` reads them), with SIGINT/SIGTERM
// forwarded to srun so the nodes end their window early and still report.
#pragma once

#include <string>

namespace hangscan::cli {

struct WatchSlurmRequest {
  std::string job_id;
  double seconds = 10;
  int rate = 49;
  int wait_ms = 10;
  bool json = false;
};

int run_watch_slurm(const WatchSlurmRequest& request);

}  // namespace hangscan::cli
