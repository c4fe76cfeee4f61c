// How the CLI renders a JobSnapshot: JSON or text, to stdout.
//
// Why: every subcommand (dump, core, slurm, pdsh) ends the same way; one place decides the
// format, colour, and grouping that the report writers are called with.
#pragma once

#include "hangscan/model.h"

namespace hangscan::cli {

struct OutputOptions {
  bool json = false;
  bool color = false;
};

// True when stdout is a terminal and NO_COLOR is not set.
bool output_wants_color();

void write_output(const JobSnapshot& job, const OutputOptions& options);

}  // namespace hangscan::cli
