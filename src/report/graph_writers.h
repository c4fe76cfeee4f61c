// Graph-shaped outputs: Graphviz DOT of the stack tree, and folded stacks for flame graphs.
//
// Why: at thousands of ranks a picture of where ranks part ways (STAT's prefix tree) reads
// faster than text, and folded stacks feed the flame-graph tools people already use. Both are
// renderings of the same grouping, so they live together and share its frame labels.
#pragma once

#include <ostream>
#include <string>

#include "group/analysis.h"
#include "hangscan/model.h"

namespace hangscan {

// digraph of analysis.trie: one node per frame, rank sets on the edges, suspect branches red.
std::string write_dot(const JobSnapshot& job, const Analysis& analysis);

// "outer;...;inner count" per distinct stack of the threads `opts` selects, over the processes
// analyze() groups (every process when none is groupable), sorted, outermost frame first.
std::string write_folded(const JobSnapshot& job, const GroupOptions& opts);

}  // namespace hangscan
