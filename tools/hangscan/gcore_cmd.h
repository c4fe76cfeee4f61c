// The --gcore hook of `hangscan dump` (and of the cluster modes): cores of chosen ranks
// after grouping.
//
// Why a separate header: the dump command owns capture and report; this adds one option
// group and one call after the report, so the core-writing policy stays in one file.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "hangscan/model.h"
#include "output.h"

namespace hangscan::cli {

struct GcoreDumpOptions {
  std::string mode;            // "" = no cores; else one-per-group | suspects | all
  std::string dir = ".";
  std::string max_size = "256M";
  CLI::Option* option = nullptr;   // --gcore, to tell a bare "--gcore" from none
  bool requested() const { return option != nullptr && option->count() > 0; }
};

// Adds --gcore [MODE], --gcore-dir DIR and --gcore-max-size SIZE to a subcommand.
void add_gcore_dump_options(CLI::App* sub, GcoreDumpOptions& o);

// Writes the cores the mode asks for (grouping as the report did); prints one line per core
// to stderr. Returns false when a core could not be written.
bool write_job_cores(const JobSnapshot& job, const OutputOptions& output,
                     const GcoreDumpOptions& o);

}  // namespace hangscan::cli
