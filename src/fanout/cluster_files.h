// cluster_output_files(): what `--output DIR` holds after a cluster capture, as data.
//
// Why: `--slurm-job`, `pdsh` and `k8s` write the same directory (one text file per node, like
// srun's trace-%N.out, then the merged report as text, as the HTML page and in the chosen
// format); which files and what each holds is library work, read from the writer registry.
// The directory is opened and checked before the fan-out (open_run_output_dir: a refused one
// costs no node round) and the files written into it (write_cluster_output_files), both with
// what failed as data; the CLI words it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fanout/collector.h"
#include "group/analysis.h"
#include "hangscan/model.h"
#include "report/report_writers.h"
#include "util/safe_output.h"

namespace hangscan {

struct OutputFile {
  std::string name;  // in the directory: "n1.txt", "report.html"
  std::string text;  // ends with a newline
};

// NODE.txt for every answered node (grouped on its own with `groups`) and for every
// unreachable one (why), report.txt and report.html of `merged` grouped as `analysis`, and
// report.EXT of `chosen` (rendered with `chosen_options`) when its extension is neither of
// those and it is not piped through another program (svg). `text` renders the text and HTML
// files (no colour). Each file goes to `take` as soon as it is rendered (a job of 10,000 nodes
// never holds 10,000 node reports at once).
void cluster_output_files(const FanoutResult& result, const JobSnapshot& merged,
                          const Analysis& analysis, const GroupOptions& groups,
                          const RenderOptions& text, const ReportWriter& chosen,
                          const RenderOptions& chosen_options,
                          const std::function<void(const OutputFile&)>& take);

// `--output DIR` of a run (cluster capture, watch --stall): the directory and how its reports
// are rendered (the text and HTML files without colour, report.EXT of the chosen format).
struct RunOutputRequest {
  std::string dir;
  RenderOptions text;
  ReportWriter chosen;
  RenderOptions chosen_options;
};

// What went into the directory: the names written, in order, and the files that could not be
// (each Error names the file and why).
struct RunOutputWritten {
  std::vector<std::string> written;
  std::vector<Error> failed;
};

// Why: a run opens its output directory before it asks any node or loads any program, so a
// refused directory costs nothing and changes nothing; the refusal is the caller's argument
// (Errc::usage, the message and hint of util/safe_output.h).
Result<OutputDir> open_run_output_dir(const std::string& path);

// Writes cluster_output_files() into `dir`, each file replaced whole or left as it was.
RunOutputWritten write_cluster_output_files(const OutputDir& dir, const FanoutResult& result,
                                            const JobSnapshot& merged, const Analysis& analysis,
                                            const GroupOptions& groups,
                                            const RunOutputRequest& request);

}  // namespace hangscan
