// cluster_output_files(): what `--output DIR` holds after a cluster capture, as data.
//
// Why: `--slurm-job`, `pdsh` and `k8s` write the same directory (one text file per node, like
// srun's trace-%N.out, then the merged report as text, as the HTML page and in the chosen
// format); which files and what each holds is library work, read from the writer registry.
// The CLI opens the directory before the fan-out (util/safe_output.h) and writes these files.
#pragma once

#include <functional>
#include <string>

#include "fanout/collector.h"
#include "group/analysis.h"
#include "hangscan/model.h"
#include "report/report_writers.h"

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

}  // namespace hangscan
