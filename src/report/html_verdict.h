// The HTML page's verdict as data: the lines of the text report's summary (SUSPECT, note,
// timing, waits, deadlock), each tied to its finding, and where each finding is in the page's tree.
//
// Why: a person clicks a verdict line to see its place in the merged tree and its members; the
// page must know who and where from the findings as data (group/finding.h), never by reading
// the sentence back. The text of each line is the text report's, made from the same words.
#pragma once

#include <nlohmann/json.hpp>

#include "group/analysis.h"
#include "hangscan/model.h"

namespace hangscan {

// Adds to `findings` (findings_to_json's array, one entry per finding, suspects then waits then
// deadlocks) each finding's "nodes" (where its members are) and "place_node" (where the others
// are): a tree node of the page is [group, depth], the group's key path cut to depth frames
// (outermost first), which names one node of the tree the page draws from "groups". A long
// unordered "members" or "others" becomes {"groups": [...], "more": [...]}: the members of
// whole groups (the page's groups[].members) and the rest.
void add_page_findings(nlohmann::json& findings, const JobSnapshot& job, const Analysis& a);

// The verdict's lines in the text report's order, each {"text", "class"} and, when it has one,
// "finding" (an index into "findings") or, for a timing line, "group" (an index into "groups").
// Suspect lines the logs added (--logs) have no finding.
nlohmann::json verdict_lines(const JobSnapshot& job, const Analysis& a);

}  // namespace hangscan
