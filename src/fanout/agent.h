// The node agent: what `hangscan agent` does on each node of a fan-out.
//
// Why: captures must run where the ranks run (ptrace does not cross machines), and the front
// end needs one small document per node. The agent finds the job's processes on its own node,
// captures them, and returns one JobSnapshot that the CLI writes in the agent wire format.
// Slurm mode finds the job's tasks by their environments (discovery/slurm_tasks.h).
// With --gcore the agent runs a second time, on fewer nodes, to write cores of processes the
// front end chose (fanout/core_round.h); it checks each pid against the same selection.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "capture/capture.h"
#include "corewrite/member_core.h"  // pid_reused()
#include "discovery/discovery.h"
#include "discovery/slurm_tasks.h"  // find_slurm_tasks()
#include "fanout/core_round.h"
#include "hangscan/model.h"
#include "hangscan/result.h"
#include "util/deadline.h"

namespace hangscan {

struct AgentOptions {
  std::string job_id;                      // --slurm-job; "" in --match mode
  std::string node;                        // the node name to report (validated)
  std::vector<std::string> exclude_steps;  // --exclude-step, plus the agent's own step
  std::optional<double> job_start;         // --job-start: the Slurm job's start (Unix seconds)
  std::string match;                       // --match REGEX (pdsh mode)
  // --pod-uid: only processes of this Kubernetes pod (its UID in their cgroup path): a node
  // agent with hostPID sees every pod of its node (k8s --node-agent).
  std::string pod_uid;
  CaptureOptions capture;
  std::chrono::milliseconds timeout{25000};  // for the whole node
};

// The node name to use: --node, else SLURMD_NODENAME (Slurm mode), else the host name.
std::string default_agent_node(const std::string& explicit_node, bool slurm_mode);

// The job's processes on this node (Slurm: by environment; pdsh: --match, without the
// processes that carry the agent's own command). One selection for both rounds: the capture
// round captures these, the core round writes cores only of pids among them. Errors only for
// bad options; finding nothing is an empty list with a warning in `diagnostics`.
Result<std::vector<DiscoveredProcess>> discover_job_processes(const AgentOptions& options,
                                                              std::vector<Diagnostic>& diagnostics);

// Finds and captures (jobs/job_loop.h: one snapshot per process, a process that cannot be
// captured is its own diagnostic, the deadline bounds the node). Errors only for bad options
// (Errc::usage); a node with no process of the job is a snapshot with a warning, so the front end
// can report the ranks as missing.
Result<JobSnapshot> run_agent(const AgentOptions& options);

// Why a core request must not be carried out here, or nullopt when it may. Between the
// capture and the core round a process can exit and its pid be reused by anything, so a pid
// is dumped only when it is still one of `job_processes` (discover_job_processes, now), was
// started when the captured one was (when the front end gave the start time), and, when the
// front end gave a rank, still has that rank. `proc_root` tells "gone" from "reused".
std::optional<Error> refuse_core_request(const CoreRequest& request,
                                         const std::vector<DiscoveredProcess>& job_processes,
                                         const AgentOptions& options,
                                         const std::string& proc_root = "/proc");

// Writes one core that passed the check. The CLI gives write_member_core()
// (corewrite/member_core.h), the code `dump --gcore` uses; tests give a fake.
using CoreWriterFn =
    std::function<CoreOutcome(const CoreRequest& request, const Deadline& deadline)>;

// The core round on this node: the requests for `options.node` (the others are for other
// nodes and ignored), each checked with refuse_core_request, then written one after the
// other until `options.timeout`; one outcome per request of this node. Errors only for bad
// options.
Result<std::vector<CoreOutcome>> run_core_agent(const AgentOptions& options,
                                                const std::vector<CoreRequest>& requests,
                                                const CoreWriterFn& write);

}  // namespace hangscan
