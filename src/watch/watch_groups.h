// Ranks grouped by what they did over a watch window, and the odd ones named, as `dump` does.
//
// Why: the question of a hung job is which rank is not where the others are. `dump` answers it
// for one instant from whole stacks; a watch window answers it from behaviour, and only from
// facts that do not move with sampling noise: a rank is *stuck* (one wait of half the window or
// more, still going at the end: where, from its system call and user stack, or its kernel stack
// when the recorder has no user stack of it), *ended* (how), or *active* (it ran and woke in the
// window; its busiest stacks are in its report, not in the key, since two healthy ranks rarely
// share their single most sampled stack). The verdict is group/analysis.h's, on those keys.
// Each node's report carries every process's key, so `watch --slurm-job` groups across nodes
// with the same rules.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "watch/watch_report.h"

namespace hangscan {

// Where a process's behaviour puts it: the key (function names, innermost first; the
// outermost names the class) and its kind and figures (words: watch/watch_words.h).
Behaviour behaviour_of(const ProcessWatch& p, double window_s);

struct BehaviourMember {
  int pid = 0;
  int ppid = 0;  // a pool's worker belongs to its owner (group/roles.h)
  std::optional<int> rank;
  std::string role;
  std::string host;  // the node, in a merged report
  Behaviour behaviour;
};

// The groups and the odd ones; empty when fewer than two processes are grouped (ranks only,
// or every process when none is a rank) unless a pool's straggler is named (group/roles.h:
// owners and idle workers are not grouped).
WatchVerdict group_behaviours(const std::vector<BehaviourMember>& members);

// Sets each process's behaviour and the report's verdict.
void group_watched(WatchReport& r);

// A behaviour as data in the report's JSON (docs/output-schema.md, "watch": kind, key and the
// kind's figures), and read back leniently: nothing when the kind or the key is missing.
nlohmann::json behaviour_to_json(const Behaviour& b);
std::optional<Behaviour> behaviour_from_json(const nlohmann::json& j);

}  // namespace hangscan
