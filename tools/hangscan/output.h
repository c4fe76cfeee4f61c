// How the CLI renders a JobSnapshot: grouping, then text, JSON, DOT, SVG or folded stacks.
//
// Why: every mode (dump, core, --slurm-job, pdsh) ends the same way; one place owns the
// output and grouping flags and calls the report writers, so every mode reports alike.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "group/analysis.h"
#include "hangscan/model.h"
#include "logs/job_analysis.h"
#include "logs/log_reader.h"
#include "report/report_writers.h"

namespace hangscan::cli {

struct OutputOptions {
  std::string format = "text";  // a name of report_writers() (report/report_writers.h)
  bool json = false;            // --json, same as --format json
  bool color = false;
  bool main_only = false;  // text: only the main thread of each process
  std::string group_threads = "main";
  std::string thread_regex;
  std::string granularity = "function";
  int top = 0;
  int width = 0;                   // text: cut lines to this many columns; 0 never (files, pipes)
  std::string html_file;           // --html FILE: the HTML page too, beside whatever stdout shows
  std::vector<std::string> logs;   // --logs: the job's logs, joined with the verdict
  std::vector<LogText> log_texts;  // --job-logs: logs read by the caller (fanout/slurm_job_logs.h)
};

// Adds --json, --format, --html, --threads, --thread-regex, --granularity, --top, --main-only.
void add_output_options(CLI::App* sub, OutputOptions& o);

// True when stdout is a terminal and NO_COLOR is not set.
bool output_wants_color();

// The grouping options the flags ask for; Error on a bad regex.
Result<GroupOptions> group_options(const OutputOptions& o);

// Columns of the terminal on stdout (TIOCGWINSZ), or 0 when stdout is a file or a pipe.
int stdout_terminal_width();

// Groups the job as the flags ask, once per run: the report, --output DIR and --gcore all use
// this one analysis (logs/job_analysis.h). Prints the error (a bad --thread-regex) when it
// fails, and each log that could not be read.
Result<Analysis> analyze_job(const JobSnapshot& job, const OutputOptions& o);

// The logs the flags name (--logs) and the caller read (--job-logs, the pods' logs).
JobLogs job_logs(const OutputOptions& o);

// Each log that could not be read, one error line with its hint on stderr.
void print_log_problems(const std::vector<LogProblem>& problems);

// Writes the report of `job` grouped as `analysis` to stdout, text cut to the terminal's width
// when stdout is one, and with --html FILE the HTML page to FILE. Returns false (with one line
// printed on stderr) when the report could not be produced or could not be written (a full disk,
// /dev/full, a closed stdout, `dot` missing).
bool write_report(const JobSnapshot& job, const Analysis& analysis, const OutputOptions& o);

// --html FILE: the page written whole through OutputDir (util/safe_output.h), so a link planted
// at FILE is replaced, never followed, and a refused directory is said with its hint. Why apart
// from --format: a person wants the text on the terminal and the page to open afterwards.
bool write_html_file(const JobSnapshot& job, const Analysis& analysis, const std::string& file);
// The same for a page already made (watch's).
bool write_page_file(const std::string& page, const std::string& file);

// Writes `text` to stdout and flushes; false, with "cannot write the report: REASON" on
// stderr, when that fails. Why one function: exit 0 must mean the report reached its reader.
bool write_stdout(const std::string& text);

// Makes sure fds 0-2 are open (a closed one is opened on /dev/null, read-only for stdout so
// that writes to it fail), so that no file hangscan opens becomes its stdout.
void reserve_standard_fds();

// The writer of the chosen format (--json is --format json) and the render options of the
// flags, for --output DIR's files (fanout/cluster_files.h).
ReportWriter chosen_writer(const OutputOptions& o);
RenderOptions render_options(const OutputOptions& o);

// Exit code for a finished run: 2 nothing captured, 1 something missing, 0 complete.
int exit_code_for(const JobSnapshot& job);

}  // namespace hangscan::cli
