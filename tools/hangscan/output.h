// How the CLI renders a JobSnapshot: grouping, then text, JSON, DOT, SVG or folded stacks.
//
// Why: every mode (dump, core, --slurm-job, pdsh) ends the same way; one place owns the
// output and grouping flags and calls the report writers, so every mode reports alike.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "group/analysis.h"
#include "hangscan/model.h"

namespace hangscan::cli {

struct OutputOptions {
  std::string format = "text";      // text | json | dot | svg | folded
  bool json = false;                // --json, same as --format json
  bool color = false;
  bool main_only = false;           // text: only the main thread of each process
  std::string group_threads = "main";
  std::string thread_regex;
  std::string granularity = "function";
  int top = 0;
};

// Adds --json, --format, --threads, --thread-regex, --granularity, --top, --main-only.
void add_output_options(CLI::App* sub, OutputOptions& o);

// True when stdout is a terminal and NO_COLOR is not set.
bool output_wants_color();

// The grouping options the flags ask for; Error on a bad regex.
Result<GroupOptions> group_options(const OutputOptions& o);

// Groups the job and writes the report to stdout. Returns false (with a message printed)
// when the output could not be produced (e.g. `dot` missing for svg).
bool write_report(const JobSnapshot& job, const OutputOptions& o);

// The report as a string (for --output DIR files).
std::string render_report(const JobSnapshot& job, const Analysis& analysis, const OutputOptions& o);

// Exit code for a finished run: 2 nothing captured, 1 something missing, 0 complete.
int exit_code_for(const JobSnapshot& job);

}  // namespace hangscan::cli
