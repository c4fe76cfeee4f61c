// The fast reader of agent documents: a JsonCursor walked straight into the model.
//
// Why: the front end of a 10,000-node job reads 10,000 agent documents; building a DOM per
// process (nlohmann) cost three quarters of the merge. This reader takes every value from the
// cursor into its ProcessSnapshot or ThreadSnapshot field as it comes, with no DOM and no
// string per key. It reads only what the agent writes (docs/design.md says which parts) and
// accepts a document only when the reference reader (read_job_json's nlohmann path) would
// accept it with the same result: every check of SnapshotFields is made here too. For anything
// else (malformed JSON, a bound exceeded, a wrong type, or a part it leaves to the reference
// reader: a process's core or asyncio tasks) it returns nullopt, and the reference reader reads the
// document and words the error.
#pragma once

#include <optional>
#include <string_view>

#include "hangscan/model.h"
#include "report/json_reader.h"
#include "util/shared_stacks.h"

namespace hangscan {

// The job of an agent document, or nullopt when it must be left to the reference reader.
// Never throws (memory exhaustion included: nullopt).
std::optional<JobSnapshot> read_agent_fast(std::string_view text, const ReadLimits& limits,
                                           SharedStacks& shared);

}  // namespace hangscan
