// Who a blocked thread waits on: its blocking call's file descriptors, followed to the process
// at the other end.
//
// Why: a hung job is a chain of waits ("rank 2 waits on rank 1, which waits on rank 0, ..."),
// and the root of the chain is the rank to look at. A thread's system call and its arguments
// (read before the freeze) name the fd it blocks on (read/recv/accept/write: the first
// argument; poll/ppoll: the pollfd array in its memory; select/pselect6: its fd sets;
// epoll_wait: the epoll fd's registered fds in /proc/PID/fdinfo). Each fd is followed to its
// socket (tcp/tcp6/unix), to the socket at the other end on this node, and to the process that
// holds it. What is not a socket (a pipe, shared memory, an RDMA device) is said as such, never
// guessed at. This runs where the processes live (the dump, the node agent), after the capture:
// a hung process's descriptors do not change.
#pragma once

#include <string>
#include <vector>

#include "hangscan/model.h"
#include "proc/node_fds.h"

namespace hangscan {

// Fills waits_on of every live thread of `job` blocked on file descriptors, each process's
// tcp_connections, and the rank of every edge whose process is in `job` on `host`.
// A thread polling a set that holds a listening socket is a server loop (it waits on any
// client): only its listening sockets are listed. Reads /proc/PID/fd, fdinfo, net/tcp,
// net/tcp6, the thread's poll set or fd sets (process_vm_readv), and unix peers through netlink
// sock_diag (hangscan's network namespace).
// `scan` (may be null): the run's node-wide fd scan (node_fds.h), taken when a claim needs the
// whole node; without one (or one never started) the node is read here, when needed.
void resolve_socket_waits(JobSnapshot& job, const std::string& host, NodeFdScan* scan = nullptr);

// Whether a thread of `pid` blocks on a pipe (its call's fds, as resolve_socket_waits reads
// them) of which `pid` holds another fd too (most likely the other end). Why: that is the wait
// whose answer needs every fd table of the node ("only this process holds its write end" or who
// else does); the run starts the node-wide scan (node_fds.h) for it as soon as the process runs
// again. True also when too many fds were to be looked at (starting the scan costs time, never
// exactness).
bool waits_on_own_pipe(int pid, const std::vector<const ThreadSnapshot*>& threads);

}  // namespace hangscan
