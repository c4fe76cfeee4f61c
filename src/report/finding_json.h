// The "findings" array of a hangscan/1 document: the analysis's findings as data.
//
// Why: "suspect_reasons" and "wait_chains" are sentences for people; a program that acts on a
// verdict (a scheduler that drains a node, a dashboard) needs who, where and how many without
// parsing prose. One entry per finding (group/finding.h), suspects first, then waits, in the
// order of the sentences; docs/output-schema.md "findings".
#pragma once

#include <nlohmann/json.hpp>

#include "group/analysis.h"
#include "hangscan/model.h"

namespace hangscan {

// How a death's rank is known, as the JSON names it: "own", "only_missing_rank", "log"; null
// when it is not linked.
nlohmann::json rank_from_name(Finding::RankFrom from);

nlohmann::json findings_to_json(const JobSnapshot& job, const Analysis& a);

}  // namespace hangscan
