// Who a thread waits on when it does not wait on a file descriptor: the owner of the mutex it
// blocks on, or the child process it waits for.
//
// Why: the waits that make the classic deadlocks are not on sockets. Two threads that took two
// mutexes in opposite orders wait on each other (a thread in futex() waits on the mutex's owner,
// below); a parent in wait4()/waitid() waits on its child, and a child blocked
// writing a full pipe that only its parent reads waits on the parent (subprocess.Popen with
// stdout=PIPE followed by wait()). With these edges the wait graph (group/wait_graph.h,
// group/deadlock.h) closes those cycles instead of ending at "which is in futex". Like the
// socket waits this runs after the capture, from the syscall arguments read before the freeze;
// it only reads the target's memory and /proc.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hangscan/model.h"

namespace hangscan {

// Sets waits_on of every live thread of `job` blocked in futex() on a pthread mutex with a known
// owner (one edge: this process, the owner's tid, via "mutex 0xADDRESS held by thread TID") or
// on a Python RLock held by another of its threads (proc/python_rlock.h: "RLock 0xOBJECT held
// by thread TID") and of every thread in
// wait4()/waitid() (one edge per awaited child, via "child PID (wait4)"). Edges already set (by
// resolve_socket_waits) are left alone. `host` names this node (as in resolve_socket_waits).
void resolve_blocking_waits(JobSnapshot& job, const std::string& host);

// ---- The owner of a mutex ----
//
// The thread that owns the pthread mutex a blocked thread waits for, read from the mutex.
//
// Why: a lock-order inversion (thread A holds m1 and waits for m2, thread B holds m2 and waits
// for m1) leaves every thread in futex() and every stack "in pthread_mutex_lock": the stacks say
// that threads wait, not on whom. glibc records the owner in the mutex itself (`__data.__owner`,
// the owner's TID, at offset 8 of pthread_mutex_t; the lock word `__lock` at 0), and the futex
// call's first argument is the lock word's address, so the owner is one 16-byte read away.
// Only a call and words that look exactly like a contended mutex count (std::mutex is a normal
// pthread mutex; robust and priority-inheritance mutexes keep the owner's TID in the lock word
// too); anything else (condition variables, semaphores such as Python's threading.Lock, custom
// futexes) names no owner: never guessed.

// The first 16 bytes of a pthread_mutex_t (x86-64 and aarch64 glibc): __lock, __count,
// __owner, __nusers.
struct MutexWords {
  std::uint32_t lock = 0;
  std::uint32_t count = 0;
  std::int32_t owner = 0;
  std::uint32_t users = 0;
};

// The owner's TID when a thread blocked in futex(args) waits for the mutex whose first words
// are `words` and the owner is one of `tids` (the process's threads) other than `waiter`.
// `args` are the six syscall arguments (uaddr, op, val, ...). A normal mutex waits with
// FUTEX_WAIT on the value 2 (locked, with waiters); a robust one on its lock word, which holds
// the owner's TID; a PI mutex uses FUTEX_LOCK_PI(2) and its lock word holds the owner's TID.
std::optional<int> mutex_owner(const std::vector<std::uint64_t>& args, const MutexWords& words,
                               const std::set<int>& tids, int waiter);

// Reads the mutex words at `address` in process `pid` (process_vm_readv: never stops it).
std::optional<MutexWords> read_mutex_words(int pid, std::uint64_t address);

}  // namespace hangscan
