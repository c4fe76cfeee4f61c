// Text report: what a person reads in a terminal at 3 a.m.
//
// Why: the answer comes first (summary, suspects with their reasons), then the evidence (the
// stack tree with compressed rank ranges, per-process threads), then what is missing
// (diagnostics, unreachable nodes). A single process without rank prints as a plain per-thread
// dump, like py-spy/eu-stack, because that is what `hangscan dump --pid P` users expect.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include "group/analysis.h"
#include "hangscan/model.h"

namespace hangscan {

struct TextOptions {
  bool color = false;       // ANSI colours; the caller decides (TTY, NO_COLOR)
  bool all_threads = true;  // per-process details: every thread, or only the main thread
  // Columns; longer lines are cut with "..." (never inside a "(file:line)"). 0: never cut,
  // which is what files and pipes get; the CLI gives a terminal's own width.
  int width = 0;
  // Jobs with more processes than this show details only for suspects and one member per group.
  std::size_t detail_limit = 16;
  std::size_t max_chain = 6;  // longer single-path runs in the tree are elided in the middle
};

// `analysis` may be null (no grouping: a per-process dump only).
std::string write_text(const JobSnapshot& job, const Analysis* analysis, const TextOptions& opts);
void write_text(std::ostream& out, const JobSnapshot& job, const Analysis* analysis,
                const TextOptions& opts);

// One frame as the details print it: "function (file:line)", "function+0xoff [module]",
// "... [inline]" for inline frames. Why exposed: per-node files and tests use the same form.
std::string frame_line(const Frame& f);

}  // namespace hangscan
