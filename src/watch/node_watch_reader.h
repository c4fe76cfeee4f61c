// The reader of one node's watch document (`watch --node-local`'s answer to the front end).
//
// Why: the answer comes from another machine and may be truncated, hostile, or written by
// another version of hangscan, whose fields may mean something else. It is read as an agent
// document is (report/agent_format.h, report/bounded_json.h): the version first, then one
// parse under the same limits (size, nesting, string and list sizes), then every field the
// merge, the text and the watchdog use checked for type and range. What passes is a document
// the merge can use without another check; the rest is that node's one-line reason.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "hangscan/result.h"
#include "report/json_reader.h"

namespace hangscan {

// The schema name a node's watch document carries (with agent_version and agent_commit).
inline constexpr const char* kNodeWatchSchema = "hangscan-watch-node/1";

// Adds the schema name and this build's version to a node's watch document.
void stamp_node_watch_version(nlohmann::json& doc);

// What a node's watchdog said (watch --node-local --stall), checked.
struct NodeStall {
  std::optional<std::string> reason;  // why this node's ranks stopped; none: they did not
  std::optional<double> last_progress_unix_s;
};

// A node's document, read once and checked.
struct NodeWatch {
  nlohmann::json doc;
  double window_start_unix_s = 0;
  std::optional<NodeStall> stall;  // present in --stall documents only
  bool ranks_ended = false;        // every process it watched has ended
};

// The checked document, or Error{bad_data} saying why this node's answer is not used (another
// version's; not JSON; over a limit; a field of the wrong type or out of range, with its path).
Result<NodeWatch> read_node_watch(std::string_view text, const ReadLimits& limits = {});

}  // namespace hangscan
