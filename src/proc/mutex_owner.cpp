#include "proc/mutex_owner.h"

#include <linux/futex.h>
#include <sys/uio.h>

#include <cstring>

namespace hangscan {

namespace {

constexpr std::uint32_t kCommandMask =
    ~static_cast<std::uint32_t>(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
constexpr int kLockPi2 = 13;  // FUTEX_LOCK_PI2 (Linux 5.14), absent from older headers

bool is_other_thread(int tid, const std::set<int>& tids, int waiter) {
  return tid > 0 && tid != waiter && tids.count(tid) != 0;
}

}  // namespace

std::optional<int> mutex_owner(const std::vector<std::uint64_t>& args, const MutexWords& words,
                               const std::set<int>& tids, int waiter) {
  if (args.size() != 6) return std::nullopt;
  const auto command = static_cast<std::uint32_t>(args[1]) & kCommandMask;
  const int owner = words.owner;
  if (!is_other_thread(owner, tids, waiter)) return std::nullopt;
  const auto tid_in_lock = static_cast<int>(words.lock & FUTEX_TID_MASK);
  if (command == FUTEX_WAIT || command == FUTEX_WAIT_BITSET) {
    // The value the waiter expects is the lock word it saw: 2 for a normal mutex, the owner's
    // TID (with the waiters bit) for a robust one.
    if (static_cast<std::uint32_t>(args[2]) != words.lock) return std::nullopt;
    if (words.lock == 2 || tid_in_lock == owner) return owner;
    return std::nullopt;
  }
  if (command == FUTEX_LOCK_PI || command == kLockPi2) {
    if (tid_in_lock == owner) return owner;
  }
  return std::nullopt;
}

std::optional<MutexWords> read_mutex_words(int pid, std::uint64_t address) {
  unsigned char raw[16] = {};
  iovec local{raw, sizeof raw};
  iovec remote{reinterpret_cast<void*>(address), sizeof raw};
  if (address == 0 || ::process_vm_readv(pid, &local, 1, &remote, 1, 0) != sizeof raw)
    return std::nullopt;
  MutexWords w;
  std::memcpy(&w.lock, raw, 4);
  std::memcpy(&w.count, raw + 4, 4);
  std::memcpy(&w.owner, raw + 8, 4);
  std::memcpy(&w.users, raw + 12, 4);
  return w;
}

}  // namespace hangscan
