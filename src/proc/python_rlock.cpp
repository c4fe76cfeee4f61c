#include "proc/python_rlock.h"

#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace hangscan {

namespace {

constexpr std::uint64_t kBelowSp = 128;  // the red zone under the stack pointer
// rlock_acquire's `self` was found 184-256 bytes above the waiter's stack pointer in 3.6-3.13
// (Debian's and pyenv builds): a window of 1 KiB keeps the reads few (each candidate costs a
// page lookup in the target).
constexpr std::uint64_t kAboveSp = 1024;
constexpr std::uint64_t kStackSpan = 64 * 1024;  // words pointing into the stack itself: skipped
constexpr std::size_t kIovBatch = 512;
constexpr std::uint64_t kLowest = 0x10000;          // no object below the first pages
constexpr std::uint64_t kHighest = 0x800000000000;  // x86-64 user space
constexpr std::uint64_t kMaxCount = 1ull << 32;     // recursion depth of a sane RLock
constexpr char kTypeName[] = "_thread.RLock";
constexpr std::uint64_t kTpNameOffset = 24;  // PyTypeObject.tp_name (non-debug builds)
// x86-64 glibc's struct pthread: header.tcb and header.self point to the struct itself; the
// kernel thread id is at 0x2d0 (glibc 2.26 to 2.43).
constexpr std::uint64_t kTcbSelfOffset = 16;
constexpr std::uint64_t kTcbTidOffset = 0x2d0;

// RLock's first five words: ob_refcnt, ob_type, rlock_lock, rlock_owner, rlock_count.
using RLockWords = std::array<std::uint64_t, 5>;

// 3.14: the parking lot's `struct wait_entry` {park_arg, addr, sema (a 32-byte sem_t, the
// futex word first), node {next, prev}, ...} lives on the waiter's stack; the futex address is
// its `sema`. Measured on Debian's 3.14.10: the entry 264 bytes above the stack pointer.
constexpr std::uint64_t kEntryToSema = 16;
constexpr std::uint64_t kSemaToNode = 32;
// The RLock object is {ob_refcnt, ob_type, _PyRecursiveMutex {PyMutex mutex (1 byte, padded
// to 8), thread, level}}: the parking lot's key is the mutex, 16 bytes into the object.
constexpr std::uint64_t kObjectToMutex = 16;
constexpr std::uint8_t kLockedAndParked = 3;  // _Py_LOCKED | _Py_HAS_PARKED

bool read_exact(int pid, std::uint64_t address, void* out, std::size_t len) {
  iovec local{out, len};
  iovec remote{reinterpret_cast<void*>(address), len};
  return ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
}

// The words at each candidate, in batches; a candidate whose memory is unreadable stays zero.
std::vector<RLockWords> read_candidates(int pid, const std::vector<std::uint64_t>& at) {
  std::vector<RLockWords> out(at.size(), RLockWords{});
  std::size_t next = 0;
  while (next < at.size()) {
    std::size_t n = std::min(kIovBatch, at.size() - next);
    std::vector<iovec> local(n), remote(n);
    for (std::size_t i = 0; i < n; ++i) {
      local[i] = {out[next + i].data(), sizeof(RLockWords)};
      remote[i] = {reinterpret_cast<void*>(at[next + i]), sizeof(RLockWords)};
    }
    ssize_t got = ::process_vm_readv(pid, local.data(), n, remote.data(), n, 0);
    // A read stops at the first range it cannot read: go on after that one.
    std::size_t done = got <= 0 ? 0 : static_cast<std::size_t>(got) / sizeof(RLockWords);
    if (done < n) out[next + done] = RLockWords{};
    next += done + 1 > n ? n : done + 1;
  }
  return out;
}

bool is_rlock_type(int pid, std::uint64_t type) {
  std::uint64_t name = 0;
  char text[sizeof kTypeName] = {};
  return read_exact(pid, type + kTpNameOffset, &name, sizeof name) && name != 0 &&
         read_exact(pid, name, text, sizeof text) && std::memcmp(text, kTypeName, sizeof text) == 0;
}

// The kernel tid of the thread whose pthread_t is `ident`, when the TCB is plausible.
std::optional<int> tid_of_ident(int pid, std::uint64_t ident) {
#if defined(__x86_64__)
  std::uint64_t tcb = 0, self = 0;
  std::int32_t tid = 0;
  if (!read_exact(pid, ident, &tcb, sizeof tcb) ||
      !read_exact(pid, ident + kTcbSelfOffset, &self, sizeof self) ||
      !read_exact(pid, ident + kTcbTidOffset, &tid, sizeof tid))
    return std::nullopt;
  if (tcb != ident || self != ident) return std::nullopt;
  return tid;
#else
  (void)pid;
  (void)ident;
  return std::nullopt;
#endif
}

// The owner of `ident` as a holder of `object`, when it is another thread of the process.
std::optional<RLockHolder> held_by(int pid, std::uint64_t object, std::uint64_t ident, int waiter,
                                   const std::set<int>& tids) {
  auto tid = tid_of_ident(pid, ident);
  if (!tid || *tid == waiter || tids.count(*tid) == 0) return std::nullopt;
  return RLockHolder{object, *tid};
}

// The key (the PyMutex's address) of the parking-lot wait entry whose semaphore is
// `futex_address`, when that entry is on the waiter's stack and still queued (its neighbours
// point back at it): 3.13 and later park there. nullopt for any other futex.
std::optional<std::uint64_t> parked_key(int pid, std::uint64_t sp, std::uint64_t futex_address) {
  if (futex_address <= sp || futex_address - sp >= kStackSpan) return std::nullopt;
  std::array<std::uint64_t, 2> entry{}, node{};
  std::uint64_t next_back = 0, prev_forth = 0;
  const std::uint64_t at = futex_address + kSemaToNode;
  if (!read_exact(pid, futex_address - kEntryToSema, entry.data(), sizeof entry) ||
      !read_exact(pid, at, node.data(), sizeof node) ||
      !read_exact(pid, node[0] + 8, &next_back, sizeof next_back) ||
      !read_exact(pid, node[1], &prev_forth, sizeof prev_forth))
    return std::nullopt;
  if (next_back != at || prev_forth != at || entry[1] < kLowest + kObjectToMutex)
    return std::nullopt;
  return entry[1];
}

// 3.14: the RLock whose recursive mutex is the parked thread's key, when it is locked with
// waiters parked and records its owner (`thread`, a pthread_t; `level` is the count less one).
std::optional<RLockHolder> parked_rlock_holder(int pid, int waiter, std::uint64_t key,
                                               const std::set<int>& tids) {
  const std::uint64_t object = key - kObjectToMutex;
  RLockWords w{};
  if (!read_exact(pid, object, w.data(), sizeof w)) return std::nullopt;
  const auto& [refcnt, type, bits, owner, level] = w;
  if (refcnt == 0 || (bits & 0xff) != kLockedAndParked || owner == 0 || level >= kMaxCount ||
      !is_rlock_type(pid, type))
    return std::nullopt;
  return held_by(pid, object, owner, waiter, tids);
}

}  // namespace

std::optional<RLockHolder> python_rlock_holder(int pid, int waiter, std::uint64_t sp,
                                               std::uint64_t futex_address,
                                               const std::set<int>& tids) {
  if (sp < kBelowSp || futex_address == 0) return std::nullopt;
  if (auto key = parked_key(pid, sp, futex_address))
    return parked_rlock_holder(pid, waiter, *key, tids);
  std::vector<std::uint64_t> stack((kBelowSp + kAboveSp) / 8);
  iovec local{stack.data(), stack.size() * 8};
  iovec remote{reinterpret_cast<void*>(sp - kBelowSp), stack.size() * 8};
  ssize_t got = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (got <= 0) return std::nullopt;
  stack.resize(static_cast<std::size_t>(got) / 8);
  std::vector<std::uint64_t> candidates;
  for (std::uint64_t w : stack) {
    bool on_stack = w >= sp - kBelowSp && w < sp + kStackSpan;
    if (w >= kLowest && w < kHighest && w % 8 == 0 && !on_stack) candidates.push_back(w);
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::vector<RLockWords> words = read_candidates(pid, candidates);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& [refcnt, type, lock, owner, count] = words[i];
    if (lock != futex_address || owner == 0 || count == 0 || count > kMaxCount || refcnt == 0)
      continue;
    if (!is_rlock_type(pid, type)) continue;
    return held_by(pid, candidates[i], owner, waiter, tids);
  }
  return std::nullopt;
}

}  // namespace hangscan
