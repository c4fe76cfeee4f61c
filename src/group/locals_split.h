// Ranks on one stack told apart by their locals: the same line, a different loop iteration.
//
// Why: a rank that skipped a sync runs a step ahead and then blocks on the same line as the
// others; every stack is equal, so grouping names nobody. With --locals the innermost user
// frames' scalar locals (a step counter) still differ, and the minority value names the rank.
// The rule returns data (split_by_locals); its sentences are made apart (report/finding_words.h),
// as the other suspect rules word theirs; analyze() calls apply_locals_split() once.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "group/analysis.h"
#include "hangscan/model.h"

namespace hangscan {

// How many user frames (Python frames outside the standard library and installed packages),
// innermost first, are compared.
inline constexpr std::size_t kLocalsSplitFrames = 3;
// How many locals of each of those frames (in the frame's order) are compared: bounds the work
// on a large job (each is compared across every member).
inline constexpr std::size_t kLocalsSplitLocals = 16;

struct LocalsSplit {
  struct Part {
    std::string value;                 // the local's value as shown ("11", "'eval'")
    std::vector<std::size_t> members;  // process indexes
    Frame frame;                       // the first member's frame holding the local
    const Frame* in_job = nullptr;     // the same frame, in the JobSnapshot
  };
  std::string local;           // the local's name ("step")
  Part majority;               // held by more than half of the members
  std::vector<Part> minority;  // every other value, fewest members first
};

// Among `members` (process indexes of `job`, all on one stack), the first scalar local (an int
// or a short string) of their innermost user frames that more than half of them share and the
// others do not. nullopt when the frames differ in shape, a local is missing somewhere, or no
// local splits them so.
std::optional<LocalsSplit> split_by_locals(const JobSnapshot& job,
                                           const std::vector<std::size_t>& members,
                                           const GroupOptions& opts);

// One locals_split finding per minority value (members: the minority, others: the majority).
std::vector<Finding> locals_split_findings(const LocalsSplit& s);

// analyze()'s hook, after the other suspect rules: when every grouped member has the same
// stack, names the minority of a locals split as suspects (with --locals), or notes that
// --locals can tell such ranks apart (Python stacks read without locals).
void apply_locals_split(const JobSnapshot& job, Analysis& a);

}  // namespace hangscan
