// The --gcore hook of `hangscan dump`, `--slurm-job` and `pdsh`: cores of chosen ranks after
// grouping, and the per-pid core writing the node agent uses for the cluster modes.
//
// Why a separate header: the dump and cluster commands own capture and report; this adds one
// option group and one call after the report, so the core-writing policy (which processes,
// how each core is written, named and reported) stays in one file for every mode.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fanout/collector.h"
#include "fanout/core_round.h"
#include "fanout_cli.h"
#include "hangscan/model.h"
#include "output.h"
#include "util/deadline.h"

namespace hangscan::cli {

struct GcoreDumpOptions {
  std::string mode;  // "" = no cores; else one-per-group | suspects | all
  std::string dir = ".";
  std::string max_size = "256M";
  CLI::Option* option = nullptr;  // --gcore, to tell a bare "--gcore" from none
  bool requested() const { return option != nullptr && option->count() > 0; }
};

// Adds --gcore [MODE], --gcore-dir DIR and --gcore-max-size SIZE to a subcommand.
void add_gcore_dump_options(CLI::App* sub, GcoreDumpOptions& o);

// A size option ("256M") in bytes; Errc::usage naming `option` when it is not a size.
Result<std::uint64_t> parse_size_option(const std::string& text, const std::string& option);

// Checks --gcore-max-size before any work is done (a bad value is a usage error, exit 64).
Status check_gcore_options(const GcoreDumpOptions& o);

// Writes the cores the mode asks for, chosen from the report's own analysis; prints one line
// per core to stderr. Returns false when a core could not be written.
bool write_job_cores(const JobSnapshot& job, const Analysis& analysis, const GcoreDumpOptions& o);

// The end of `dump`: the report, then (--gcore) the cores; returns the exit code.
int finish_local_report(const JobSnapshot& job, const OutputOptions& output,
                        const GcoreDumpOptions& o);

// Runs one core round of agents on `nodes` with `agent_args` (srun or pdsh, with the
// fan-out's deadline) and returns what they sent.
using CoreRoundFn = std::function<AgentAnswers(const std::vector<std::string>& nodes,
                                               const std::vector<std::string>& agent_args)>;

// The end of --slurm-job and pdsh with --gcore: when something was captured (`rc` is the
// report's exit code), picks members of the merged job from its analysis like write_job_cores, runs
// one core round on the nodes that hold them, prints one line per core (and per core not written,
// with the reason). Returns the exit code: `rc`, or 1 when a core could not be written.
int finish_cluster_cores(int rc, const FanoutResult& result, const JobSnapshot& merged,
                         const Analysis& analysis, const FanoutCliOptions& fanout,
                         const GcoreDumpOptions& o, const CoreRoundFn& run_round);

}  // namespace hangscan::cli
