// Pool roles: the owner of forked workers, the workers, and which of them are idle.
//
// Why: a multiprocessing Pool, a ProcessPoolExecutor or a torch DataLoader is one owner and N
// workers, not N+1 peers. Grouped as peers, the owner (waiting for results) and the idle
// workers (waiting in the pool's task loop, each in another frame of the queue read) were
// named suspects and the worker stuck in the user's task was one voice among many. Discovery
// says who forked whom (owner, worker: proc/rank_info.h); the stacks say which worker is idle
// (its pool's task loop, no user frame inside it) and which one is in a task; this file holds
// the library patterns that decide it (one table) and the verdict on a pool: the worker in
// user code among idle or dead siblings is the suspect, its owner waits for it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "group/finding.h"
#include "hangscan/model.h"

namespace hangscan {

struct Analysis;

// Role names as in ProcessSnapshot::role (proc/rank_info.h holds the same names for discovery).
inline constexpr const char* kOwnerRole = "owner";
inline constexpr const char* kWorkerRole = "worker";
inline constexpr const char* kIdleRole = "idle";

// True when the thread waits in a pool's task loop for its next task (multiprocessing's pool
// worker, concurrent.futures' process worker, torch's DataLoader worker loop), in any frame of
// the queue read and with no frame of a task inside the loop.
bool in_idle_worker_loop(const ThreadSnapshot& t);

// A pool's task loop (kWorkerLoops) is on the thread's stack: between tasks or around one.
bool in_pool_loop(const ThreadSnapshot& t);

// A frame of the program's own code: a Python frame outside the interpreter's library and
// installed packages.
bool is_user_frame(const Frame& f);

// Pool workers started by `spawn` or `forkserver` have a command line of their own, so
// discovery made them ranks of unknown number (under their "launcher" parent, or under the
// forkserver). Role "rank" without a number -> "worker" for each whose main thread runs a
// pool's task loop (kWorkerLoops); their owner (the parent, or the forkserver's parent) turns
// "launcher" or "process" -> "owner" unless ranks are its children too. The forkserver stays a
// helper.
void mark_started_workers(JobSnapshot& job);

// Role "worker" -> "idle" for each worker whose main thread waits in its pool's task loop.
void mark_idle_workers(JobSnapshot& job);

// True for the workers of a pool and the processes left alone by it (owner, idle workers)
// in the rules of analyze(): workers are grouped, owners and idle workers are not.
bool is_worker_role(const std::string& role);
// Owner, worker or idle.
bool is_pool_role(const std::string& role);

// The straggler rule, for each owner whose forked workers are in the job: a live worker in
// user code is a suspect when some of its siblings are idle or dead, or when it is the
// owner's only worker. Adds one pool_straggler finding per straggler to a.findings; the
// stragglers go to `flagged`.
// Returns true when every grouped process is a worker whose pool's verdict was given here
// (then the majority rules have nothing to add).
bool worker_findings(const JobSnapshot& job, Analysis& a, std::vector<std::size_t>& flagged);

// One pool_wait finding ("vm:100 waits for its worker process vm:104, in work (pool_hang.py:29)")
// per owner that is not running and whose straggler is a suspect; and per rank whose forked worker
// (a DataLoader worker: a helper) is in user code beside idle siblings, so the wait chain goes
// on from the rank to its stuck worker. a.suspect_members must be final.
std::vector<Finding> pool_wait_findings(const JobSnapshot& job, const Analysis& a);

}  // namespace hangscan
