// run_cluster_capture(): the whole of a cluster capture (`--slurm-job`, `pdsh`, `k8s`) as data.
//
// Why: every cluster mode does the same after its flags: plan the nodes, run the capture round
// of agents with the capture flags (the quiet path's --no-bpf included), merge, analyze once,
// report, then (--gcore) the core round through the same launcher. That control flow is library
// work, the analysis with the job's logs included (logs/job_analysis.h); the CLI maps its flags
// to a ClusterRequest, words the plan and writes the report from a hook (the report comes before
// the core round, which takes longer), then words the cores.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "corewrite/job_cores.h"
#include "fanout/cluster_files.h"
#include "fanout/collector.h"
#include "fanout/k8s_logs.h"
#include "fanout/launcher.h"
#include "group/analysis.h"
#include "hangscan/result.h"
#include "jobs/capture_flags.h"
#include "logs/job_analysis.h"

namespace hangscan {

struct ClusterRequest {
  CaptureFlags capture;                    // forwarded to every agent (capture_flag_args)
  GroupOptions group;                      // how the merged job is grouped (an error ends the run)
  JobLogs logs;                            // joined with the analysis (--logs, --job-logs)
  std::optional<JobCoresRequest> cores;    // --gcore: the core round after the report
  std::optional<RunOutputRequest> output;  // --output DIR: opened before any node is asked
  // k8s --pod-logs, --pod-log-file: the logs of the pods that answered, read after the capture
  // round and joined beside `logs`.
  std::optional<PodLogOptions> pod_logs;
};

// What one cluster capture found: the plan, the merged capture round, its analysis, the logs
// that could not be read, what went into --output DIR and, when cores were asked for and the
// round ran, the cores (or why the round could not run).
struct ClusterOutcome {
  LaunchPlan plan;
  ClusterRun run;
  Analysis analysis;
  std::vector<LogProblem> log_problems;
  std::vector<std::string> log_commands;   // the kubectl calls of request.pod_logs (for -v)
  std::optional<RunOutputWritten> output;  // with request.output
  std::optional<Result<JobCores>> cores;
};

// Where the caller takes part; every member may be empty.
struct ClusterHooks {
  std::function<void(const LaunchPlan&)> planned;  // before any agent runs (-v says the plan)
  std::function<void(const NodeProgress&)> progress;
  std::function<void(const EarlyNote&)> note;  // early notes on odd ranks (EarlySuspects), as data
  // Writes the report before the core round; false: the report failed, no core round.
  std::function<bool(const ClusterOutcome&)> report;
};

// Opens `request.output`'s directory (a refused one: Errc::usage, before anything runs), plans
// (errors from the launcher's plan, Errc::usage for what the user gave wrong), runs the
// capture round on every node with `request.capture`'s agent arguments, analyzes the merged
// job as `request.group` says with its logs (and the pods', request.pod_logs) joined, calls
// `hooks.report`, writes the files of
// --output DIR, then, with `request.cores`, when a node answered and the report and every file
// were written, runs the core round (run_cluster_cores) through the launcher's own run_agents.
Result<ClusterOutcome> run_cluster_capture(Launcher& launcher, const ClusterRequest& request,
                                           const ClusterHooks& hooks);

}  // namespace hangscan
