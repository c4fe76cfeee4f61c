// Who waits on whom across the job: the threads' wait edges joined into chains, told in one
// sentence per root.
//
// Why: "ranks 2 -> 1 -> 0 wait on rank 3, which waits on a pipe (job.py:11)" names the rank to
// look at even when every stack looks alike (each rank of a ring blocks in the same recv). The
// node resolves what it can see (proc/socket_waits.h); a TCP connection to another node is
// completed here from the other node's tcp_connections, since only the front end holds every
// node's document. No I/O: the same answer for a dump, a merged cluster, or a JSON file read back.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "group/finding.h"
#include "hangscan/model.h"

namespace hangscan {

// Completes the job's wait edges: a "tcp A -> B" edge gets the host, pid and rank of the
// process whose tcp_connections hold "B -> A" (exactly one process), and every edge with a
// host and pid gets that process's rank.
void link_wait_edges(JobSnapshot& job);

// A process waits on another (indexes into JobSnapshot::processes), by `via`.
struct ProcessWait {
  std::size_t from = 0;
  std::size_t to = 0;
  std::string via;
};

// One edge that stands for its process (see process_waits()) and the thread that holds it.
struct ThreadWait {
  const ThreadSnapshot* thread = nullptr;
  const WaitEdge* edge = nullptr;
};
// A process's edges to other processes (edges to its own threads are left out): its main
// thread's; when the main thread waits on a futex or on one of its own threads and on no other
// process, its other threads'.
std::vector<ThreadWait> process_wait_edges(const ProcessSnapshot& p);

// The main thread's edge to one of its own threads (a mutex's owner, a server thread), if any.
const WaitEdge* own_thread_edge(const ProcessSnapshot& p);

// The process-level wait graph: a process waits on what its main thread waits on when that
// thread blocks on file descriptors; when the main thread waits on a futex (on its own
// threads, as torch's c10d::Work::wait does), on what its other threads wait on; otherwise
// (sleeping, running) on nobody. Only the processes analyze() groups (the ranks) take part: a
// wait on the launcher or a helper is a wait outside the job's ranks. Edges to itself are left out.
std::vector<ProcessWait> process_waits(const JobSnapshot& job);

// One finding per process that others wait on and that waits on no process of the job
// (wait_chain: members in chain order when it is a chain, the root in `others`), and one
// wait_cycle for the processes whose waits reach no such process.
std::vector<Finding> wait_chain_findings(const JobSnapshot& job);

}  // namespace hangscan
