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

#include "hangscan/model.h"

namespace hangscan {

// Fills waits_on of every live thread of `job` blocked on file descriptors, each process's
// tcp_connections, and the rank of every edge whose process is in `job` on `host`.
// A thread polling a set that holds a listening socket is a server loop (it waits on any
// client): only its listening sockets are listed. Reads /proc/PID/fd, fdinfo, net/tcp,
// net/tcp6, the thread's poll set or fd sets (process_vm_readv), and unix peers through netlink
// sock_diag (hangscan's network namespace).
void resolve_socket_waits(JobSnapshot& job, const std::string& host);

}  // namespace hangscan
