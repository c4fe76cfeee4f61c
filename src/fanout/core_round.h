// The core round of `hangscan --slurm-job ID --gcore` and `hangscan pdsh ... --gcore`.
//
// Why: a core must be written where the process runs (ptrace and process_vm_readv do not
// cross machines), but the choice of *which* processes get one is made at the front end,
// after every node's stacks are merged and grouped (one representative per group plus every
// suspect, across the whole job). So the front end runs a second, short round of agents, only
// on the nodes that hold a chosen process, and names the processes on the agent's command
// line as NODE:PID[:RANK]; each agent writes the cores of its own node and answers with a
// framed document listing each core written (path, size, pause) or why not. This file holds
// what both ends share: the request syntax, the answer document, and how the front end pairs
// answers with requests (a request nobody answered still gets a reason).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "corewrite/core_request.h"
#include "fanout/collector.h"
#include "hangscan/result.h"

namespace hangscan {

// "n2:1234:3" or "n2:1234", then "@START" when the start time is known: "n2:1234:3@81234".
std::string format_core_request(const CoreRequest& request);
// The inverse; the node name is validated, the pid must be positive, the rank >= 0.
Result<CoreRequest> parse_core_request(std::string_view text);

// The agent's answer document ("hangscan-cores/1"), and its defensive reader (Errc::bad_data
// for anything malformed or out of bounds; never an exception).
std::string write_core_outcomes_json(const std::string& node,
                                     const std::vector<CoreOutcome>& outcomes);
Result<std::vector<CoreOutcome>> read_core_outcomes_json(std::string_view text);

// The agent arguments of a core round: the requests, then where and how big.
std::vector<std::string> core_round_agent_args(const std::vector<CoreRequest>& requests,
                                               const std::string& dir, const std::string& max_size);

// One outcome per request, in request order. `request_hosts[i]` is the node request i was
// sent to as the round asked it (a Slurm node or pdsh host; its document is looked up by
// it). A request whose node did not answer, or whose agent did not mention it, gets an error
// saying so.
std::vector<CoreOutcome> pair_core_outcomes(const std::vector<CoreRequest>& requests,
                                            const std::vector<std::string>& request_hosts,
                                            const AgentAnswers& answers);

}  // namespace hangscan
