// The watchdog's bundle: DIR/stall-TIME/ with the capture's report and the recorder's timeline.
//
// Why one writer: `watch --stall` on one machine and across the nodes of a Slurm job fire for
// the same reasons and must leave the same files (report.txt with the reason first,
// report.json as `dump --json`, report.html; timeline.txt, timeline.json and timeline.html as
// `watch` writes them: docs/html-report.md), so a reader or a script finds one layout whichever
// watchdog wrote it. Both sets come from the writer registries (report/report_writers.h,
// watch/watch_writers.h).
#pragma once

#include <string>

#include "group/analysis.h"
#include "hangscan/model.h"
#include "hangscan/result.h"
#include "watch/watch_writers.h"

namespace hangscan {

// Creates OUTPUT_DIR/stall-YYYYMMDDTHHMMSS/ new (mode 0755; "-2", "-3" ... when taken) through
// the checked OUTPUT_DIR (util/safe_output.h) and writes the six files in it; returns its path.
Result<std::string> write_stall_bundle(const std::string& output_dir, const std::string& reason,
                                       const JobSnapshot& job, const Analysis& analysis,
                                       const WatchDocument& timeline);

}  // namespace hangscan
