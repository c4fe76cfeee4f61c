// The agent wire format ("merge at the edge") and the merge of node documents.
//
// Why: a node agent with 8 ranks in one collective sends each distinct frame and each
// distinct stack once; threads refer to a stack by index. What crosses the network then grows
// with the number of distinct stacks on the node, not with ranks x threads x depth, and the
// front end still gets back exactly the JobSnapshot the agent captured (read_job_json).
#pragma once

#include <string>
#include <vector>

#include "hangscan/model.h"

namespace hangscan {

inline constexpr const char* kAgentSchemaName = "hangscan-agent/1";

// One compact JSON line: "frames" (distinct frames), "stacks" (arrays of frame indexes,
// innermost first), and "processes" whose threads' frames/native_frames/kernel_frames are
// indexes into "stacks". Read back with read_job_json().
std::string write_agent_json(const JobSnapshot& job);

// Joins node documents into one job: processes, diagnostics and unreachable nodes in the
// order given; expected_world_size is the largest seen; job_id the first non-empty one.
// Why: the front end merges what every node sent before analyze() runs over the whole job.
JobSnapshot merge_job_snapshots(std::vector<JobSnapshot> parts);

}  // namespace hangscan
