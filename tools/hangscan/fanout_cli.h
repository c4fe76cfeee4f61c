// What the multi-node front ends (`--slurm-job`, `pdsh`) and the agent share on the CLI.
//
// Why: both front ends take the same capture flags (forwarded to every agent), the same
// timeout, agent path and `--output DIR`, and end the same way: progress on a TTY, the merged
// report, one file per node, unreachable nodes named on stderr, exit 1 when partial.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fanout/collector.h"
#include "fanout/k8s_logs.h"
#include "fanout/launcher.h"
#include "fanout/terminal_progress.h"
#include "jobs/capture_flags.h"
#include "output.h"
#include "util/safe_output.h"

namespace hangscan::cli {

struct FanoutCliOptions {
  double timeout_s = 30;   // --timeout: for the whole fan-out
  std::string agent_path;  // --agent-path; default: this binary's own path
  std::string output_dir;  // --output DIR
  bool verbose = false;
  CaptureFlags capture;  // passed on to the agents (capture_flag_args)
  OutputOptions output;
  // k8s --pod-logs, --pod-log-file: the pods' logs, fetched by the library after the capture
  // and read as --logs are; nullopt: none.
  std::optional<PodLogOptions> pod_logs;
  // How to look at a node that did not answer, for the hint under the unreachable ones.
  std::string check_node = "'scontrol show node NAME' or ssh";
};

// Adds --timeout, --agent-path, --output, -v and the capture flags (output flags separately).
void add_fanout_options(CLI::App* app, FanoutCliOptions& o);

// --agent-path when given (must be absolute), else /proc/self/exe resolved.
Result<std::string> resolve_agent_path(const std::string& explicit_path);

// "3/40 nodes answered, 1 unreachable" on stderr, rewritten in place, and the early notes on
// odd ranks above it, when stderr is a terminal; else nothing (scripts and tests see clean
// output).
std::shared_ptr<TerminalProgress> tty_progress();

// Prints what went missing, writes the report of `merged` grouped as `analysis` (the files of
// --output DIR are the library's: run_cluster_capture), returns the exit code.
int finish_fanout(const FanoutResult& result, const JobSnapshot& merged, const Analysis& analysis,
                  const FanoutCliOptions& o);

struct GcoreDumpOptions;

// A cluster mode after its flags: the flags (--output DIR too) as a ClusterRequest for
// run_cluster_capture (fanout/cluster_capture.h: plan, capture round, one analysis, --gcore
// core round), and what comes back written: -v's plan, the report (finish_fanout) before the
// core round, the files of --output DIR that failed, then the cores. Returns the exit code.
int run_cluster_mode(Launcher& launcher, const FanoutCliOptions& o, const GcoreDumpOptions& gcore);

// The options every cluster mode checks before it starts anything: the grouping and --gcore
// options and, when given, the --match regex (sent as is, a bad pattern would fail on every node
// alike and read as "every node unreachable"). Prints the error; false means exit kExitUsage.
bool cluster_options_valid(const FanoutCliOptions& o, const GcoreDumpOptions& gcore,
                           const std::string* match = nullptr);

}  // namespace hangscan::cli
