// ClusterWatch: `hangscan watch --slurm-job ID`, the nodes' watch reports merged into one.
//
// Why: each node records its own ranks (a node-local `watch` step) and can only speak for its
// own clock: the timeline's times are CLOCK_MONOTONIC, which starts at each node's boot. The
// node stamps its report with its name and the wall-clock time of its window's start (boot
// time = CLOCK_REALTIME - CLOCK_MONOTONIC, read bracketed so the read's own error is known);
// the front end tags every process, wait and event with its node, puts the events of all
// nodes on one wall-clock axis and sorts them. Across nodes the order is only as good as the
// nodes' clock sync (NTP), which hangscan cannot measure: the merged report says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hangscan/model.h"
#include "report/json_reader.h"

namespace hangscan {

// This machine's boot time on the wall clock, and how precisely it was read.
struct NodeClock {
  double boot_unix_s = 0;
  double read_error_s = 0;  // the span of the bracketing reads: the boot time is within it
};
NodeClock read_node_clock();

// Adds the node's name and its window's wall-clock start to a node's watch JSON (watch_json).
void stamp_node_watch(nlohmann::json& doc, const std::string& node, std::int64_t window_start_ns,
                      const NodeClock& clock);

struct NodeWatchDocument {
  std::string node;  // as asked (the Slurm node name)
  std::string text;  // the node's stamped watch JSON
};

// The merged report: processes by rank (then node, pid) with their node, the timeline of
// every node on one axis (t_s from the earliest node's window start), per-node facts, and the
// nodes that sent nothing usable (a document that does not read is such a node, not an error).
// Each document is read once by read_node_watch (watch/node_watch_reader.h: version, limits,
// checked fields); each node entry carries what its watchdog said ("stall", "ranks_ended").
nlohmann::json merge_node_watches(const std::string& job_id,
                                  const std::vector<NodeWatchDocument>& documents,
                                  std::vector<UnreachableNode> unanswered,
                                  const ReadLimits& limits = {});

// The merged report as text: one block per rank with its node, then the merged timeline.
std::string cluster_watch_text(const nlohmann::json& merged);

}  // namespace hangscan
