// The agent wire format ("merge at the edge") and the merge of node documents.
//
// Why: a node agent with 8 ranks in one collective sends each distinct frame and each
// distinct stack once; threads refer to a stack by index. What crosses the network then grows
// with the number of distinct stacks on the node, not with ranks x threads x depth, and the
// front end still gets back exactly the JobSnapshot the agent captured (read_job_json).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hangscan/model.h"

namespace hangscan {

inline constexpr const char* kAgentSchemaName = "hangscan-agent/1";

// One compact JSON line: "frames" (distinct frames), "stacks" (arrays of frame indexes,
// innermost first), and "processes" whose threads' frames/native_frames/kernel_frames are
// indexes into "stacks". Read back with read_job_json().
std::string write_agent_json(const JobSnapshot& job);

// Every agent document names the hangscan that wrote it (top-level "agent_version" and
// "agent_commit", util/version.h). Why: an agent binary of another version on some node
// (a stale copy on a shared file system, a node left out of an upgrade) may write a format this
// front end reads differently; the front end compares versions before it reads the rest.
struct AgentVersion {
  std::string version;  // "" when the document carries none (written before 0.1.0)
  std::string commit;
};

// The version fields of an agent document, read without converting the rest of it (a SAX pass
// that stops at them; they come first). Returns an empty AgentVersion when they are missing or
// the text is not JSON.
AgentVersion agent_document_version(std::string_view document);

// Why the front end must not use this node's document: "" when `agent` has this build's
// version, else one sentence naming both versions and the fix.
std::string agent_version_mismatch(const AgentVersion& agent);

// Joins node documents into one job: processes, diagnostics and unreachable nodes in the
// order given; expected_world_size is the largest seen; job_id the first non-empty one.
// Why: the front end merges what every node sent before analyze() runs over the whole job.
JobSnapshot merge_job_snapshots(std::vector<JobSnapshot> parts);

}  // namespace hangscan
