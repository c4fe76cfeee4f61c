// write_member_core(): one core of a process a report chose, named after its node and rank.
//
// Why: `dump --gcore` on this machine and the agent's core round on every node write the
// chosen processes' cores the same way (same names, same size cap, same refusal of a pid that
// now names another process); this is that one way, in the library rather than in a CLI.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "corewrite/core_pick.h"
#include "corewrite/core_request.h"
#include "hangscan/model.h"
#include "hangscan/result.h"
#include "util/deadline.h"

namespace hangscan {

// One core of a chosen process, named after request.node, .rank and .pid, in `dir` (created
// 0700 when missing). Failures are the outcome's error and hint; `dir_option` names the flag
// that chose the directory in hints ("--gcore-dir").
CoreOutcome write_member_core(const CoreRequest& request, const std::string& dir,
                              std::uint64_t max_size, const Deadline& deadline,
                              const std::string& dir_option = "--gcore-dir");

// An error when `pid` (under `proc_root`) started at another time than `start_ticks` (the
// capture's /proc/PID/stat starttime): the pid now names another process. nullopt when the
// times agree, `start_ticks` is 0 (unknown), or the pid is gone (the caller says that).
std::optional<Error> pid_reused(int pid, std::uint64_t start_ticks,
                                const std::string& proc_root = "/proc");

// `dump --gcore`: the cores of the `picked` processes of `job` (captured on this machine),
// one outcome each in the order picked; a pid reused since the capture is refused.
std::vector<CoreOutcome> write_local_cores(const JobSnapshot& job, const PickedCores& picked,
                                           const std::string& dir, std::uint64_t max_size);

}  // namespace hangscan
