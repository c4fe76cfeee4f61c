// CoreRequest and CoreOutcome: one chosen process to write a core of, and what became of it.
//
// Why here: `dump --gcore` writes the cores on this machine and the agents of the cluster core
// round (fanout/core_round.h) write them on theirs; both go through write_member_core()
// (corewrite/member_core.h), so the request and its outcome belong to the core writer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hangscan {

// One process to write a core of. `node` is the name the agent on that node gives itself
// (FanoutResult::agent_nodes): the agents of one round all get the same argv and each keeps
// the requests for its own node.
struct CoreRequest {
  std::string node;
  int pid = 0;
  std::optional<int> rank;  // from the report: names the core, and must still be the pid's rank
  std::uint64_t start_ticks = 0;  // from the report: must still be the pid's; 0 unchecked
  bool operator==(const CoreRequest&) const = default;
};

// What became of one request: a core written, or why not.
struct CoreOutcome {
  std::string node;
  int pid = 0;
  std::optional<int> rank;
  std::string path;  // the core, when written
  std::uint64_t file_size = 0;
  std::int64_t pause_us = 0;          // how long the process was stopped
  std::vector<std::string> warnings;  // a core written but incomplete (over the cap ...)
  std::string error;                  // set when no core was written
  std::string hint;
  bool written() const { return error.empty(); }
};

}  // namespace hangscan
