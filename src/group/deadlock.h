// Deadlocks: waits that come back to where they started, found in the wait edges and told as
// one sentence each.
//
// Why: a cycle is the one hang whose cause the report can state outright. Two threads that took
// two mutexes in opposite orders ("thread 4711 (transfer, bank.cpp:14) waits for a mutex held by
// thread 4712 (audit, bank.cpp:20), which waits for one held by 4711"), or a parent in wait()
// on a child that is blocked writing a pipe only that parent reads (subprocess.Popen with
// stdout=PIPE, then wait()): nothing outside the cycle can end it. The edges come from the node
// (proc/blocking_waits.h, proc/socket_waits.h); this finds the cycles from a JobSnapshot alone
// (no I/O), so a dump, a merged cluster and a JSON file read back give the same answer.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "group/finding.h"
#include "hangscan/model.h"

namespace hangscan {

// One cycle. Threads: members[i] waits on members[i + 1], the last on the first, all in one
// process, by the edges `via` (same order). Processes: the same with each member standing for
// its process (tid is the thread that holds the edge); only cycles through a wait for a child
// are reported, since rings of ranks that wait on each other are told by the wait chains.
struct Deadlock {
  enum class Kind { threads, processes };
  struct Member {
    std::size_t process = 0;  // index into JobSnapshot::processes
    int tid = 0;
  };
  Kind kind = Kind::threads;
  std::vector<Member> members;  // the lowest tid (threads) / process index first
  std::vector<const WaitEdge*> via;
};

// Every cycle of the job's wait edges, each once, in process order.
std::vector<Deadlock> find_deadlocks(const JobSnapshot& job);

// The cycle as a finding (kind deadlock), and back.
Finding deadlock_finding(const Deadlock& d);
Deadlock deadlock_of(const Finding& f);

}  // namespace hangscan
