// The --gcore flags of `hangscan dump`, `watch`, `--slurm-job`, `pdsh` and `k8s`: the flags mapped
// to a JobCoresRequest, and the cores the library wrote (corewrite/job_cores.h on this machine,
// fanout/cluster_capture.h across nodes) worded, one line per core.
//
// Why a separate header: the dump and cluster commands own capture and report; this adds one
// option group and one call after the report, so every mode words its cores alike.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "corewrite/job_cores.h"
#include "hangscan/model.h"
#include "output.h"

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

// The flags as the library's request; Errc::usage for a bad --gcore-max-size or an empty dir.
Result<JobCoresRequest> gcore_request(const GcoreDumpOptions& o);

// Checks --gcore-max-size before any work is done (a bad value is a usage error, exit 64).
Status check_gcore_options(const GcoreDumpOptions& o);

// Writes the cores the mode asks for, chosen from the report's own analysis
// (hangscan::write_job_cores); prints one line per core to stderr. Returns false when a core
// could not be written.
bool write_job_cores(const JobSnapshot& job, const Analysis& analysis, const GcoreDumpOptions& o);

// The end of --slurm-job, pdsh and k8s with --gcore: one line per core of the core round
// (run_cluster_capture ran it after the report `rc` is the exit code of), and per core not
// written with the reason; -v adds the round's commands. Returns `rc`, or 1 when a core could
// not be written.
int report_cluster_cores(int rc, const Result<JobCores>& cores, bool verbose);

}  // namespace hangscan::cli
