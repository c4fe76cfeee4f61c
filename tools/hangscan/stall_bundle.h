// The watchdog's bundle: DIR/stall-TIME/ with the capture's report and the recorder's timeline.
//
// Why one writer: `watch --stall` on one machine and across the nodes of a Slurm job fire for
// the same reasons and must leave the same files (report.txt with the reason first,
// report.json as `dump --json`, timeline.txt and timeline.json as `watch` prints them, and the
// pages of both, report.html and timeline.html: docs/html-report.md), so a
// reader or a script finds one layout whichever watchdog wrote it; and both judge --log alike.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "group/analysis.h"
#include "hangscan/model.h"
#include "hangscan/result.h"

namespace hangscan::cli {

struct StallTimeline {
  std::string text;     // the recorder's report as text
  nlohmann::json json;  // and as JSON
};

// "FILE was not written for N s" when `log_file` (--log) was last written `stall` seconds ago
// or more, else "" (also when it is not given or cannot be read): the io-watchdog criterion.
std::string log_stall(const std::string& log_file, double stall);

// The one line that says a bundle was written (scripts and tests look for it).
void print_stall(const std::string& reason, const std::string& dir);

// True when OUTPUT_DIR can hold bundles (util/safe_output.h: opened, made when missing, not
// another user's); else prints why with a hint. Checked when the watch starts, so a refused
// directory is a usage error before anything is watched.
bool output_dir_usable(const std::string& output_dir);

// Creates OUTPUT_DIR/stall-YYYYMMDDTHHMMSS/ new (mode 0755; "-2", "-3" ... when taken) through
// the checked OUTPUT_DIR and writes the six files in it as OutputDir::write_file does;
// returns its path.
Result<std::string> write_stall_bundle(const std::string& output_dir, const std::string& reason,
                                       const JobSnapshot& job, const Analysis& analysis,
                                       const StallTimeline& timeline);

}  // namespace hangscan::cli
