// Who holds the Python RLock a thread blocks on, read from the lock object.
//
// Why: two Python threads that took two threading.RLocks in opposite orders both sit in futex()
// under the same "acquire" frames: the stacks say that they wait, not on whom. CPython's RLock
// (the C `_thread.RLock`, what threading.RLock() returns) records its owner: the object is
// {ob_refcnt, ob_type, rlock_lock, rlock_owner, rlock_count} in 3.6-3.13, where rlock_lock is
// the semaphore the waiter's futex() call waits on and rlock_owner the owner's pthread_t (on
// x86-64 glibc the owner's thread control block, whose `tid` field names the kernel thread).
// The waiter's C stack holds the object's address a few hundred bytes above its stack pointer
// (rlock_acquire's `self`); a word there counts only when it is an object of type
// "_thread.RLock" whose semaphore is exactly the futex address, so nothing is guessed.
// 3.14 changed the object to {ob_refcnt, ob_type, _PyRecursiveMutex {PyMutex mutex, thread,
// level}} and a waiter parks in CPython's parking lot: its futex address is the semaphore of a
// wait entry on its own stack whose `addr` is the PyMutex it waits for (16 bytes into the
// object). That counts only when the entry is still queued (its list neighbours point back at
// it), the object's type is "_thread.RLock", its mutex is locked with waiters parked and its
// `thread` (the owner's pthread_t) names another thread of the process.
// threading.Lock records no owner: a thread blocked on one gets no edge. Only memory is read
// (process_vm_readv): the target is never stopped.
#pragma once

#include <cstdint>
#include <optional>
#include <set>

namespace hangscan {

// The RLock a blocked thread waits for and the thread that holds it.
struct RLockHolder {
  std::uint64_t object = 0;  // address of the _thread.RLock object
  int owner_tid = 0;
};

// For a thread of `pid` (tid `waiter`, stack pointer `sp`) blocked in futex() on
// `futex_address`: the RLock whose semaphore that is, when its address is on the thread's stack
// near `sp`, and its owner when that is another of the process's threads `tids`. nullopt for
// anything else (a threading.Lock, a condition variable, a mutex, an owner outside `tids`).
std::optional<RLockHolder> python_rlock_holder(int pid, int waiter, std::uint64_t sp,
                                               std::uint64_t futex_address,
                                               const std::set<int>& tids);

}  // namespace hangscan
