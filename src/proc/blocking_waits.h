// Who a thread waits on when it does not wait on a file descriptor: the owner of the mutex it
// blocks on, or the child process it waits for.
//
// Why: the waits that make the classic deadlocks are not on sockets. Two threads that took two
// mutexes in opposite orders wait on each other (a thread in futex() waits on the mutex's owner,
// proc/mutex_owner.h); a parent in wait4()/waitid() waits on its child, and a child blocked
// writing a full pipe that only its parent reads waits on the parent (subprocess.Popen with
// stdout=PIPE followed by wait()). With these edges the wait graph (group/wait_graph.h,
// group/deadlock.h) closes those cycles instead of ending at "which is in futex". Like the
// socket waits this runs after the capture, from the syscall arguments read before the freeze;
// it only reads the target's memory and /proc.
#pragma once

#include <string>

#include "hangscan/model.h"

namespace hangscan {

// Sets waits_on of every live thread of `job` blocked in futex() on a pthread mutex with a known
// owner (one edge: this process, the owner's tid, via "mutex 0xADDRESS") and of every thread in
// wait4()/waitid() (one edge per awaited child, via "child PID (wait4)"). Edges already set (by
// resolve_socket_waits) are left alone. `host` names this node (as in resolve_socket_waits).
void resolve_blocking_waits(JobSnapshot& job, const std::string& host);

}  // namespace hangscan
