#include "proc/blocking_waits.h"

#include <linux/futex.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "proc/proc_files.h"
#include "proc/python_rlock.h"
#include "util/parse_number.h"

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

namespace {

constexpr std::size_t kMaxChildEdges = 64;

// Children of every thread of `pid` (/proc/PID/task/TID/children: any thread of a process may
// reap a child another thread started), and the processes of `job` whose parent it is (that
// file is only reliable for stopped children, the kernel says).
std::set<int> children_of(int pid, const JobSnapshot& job) {
  std::set<int> out;
  for (const ProcessSnapshot& p : job.processes) {
    if (p.ppid == pid && !p.core) out.insert(p.pid);
  }
  auto tasks = list_tasks(pid);
  if (!tasks) return out;
  for (int tid : *tasks) {
    auto text = read_text_file(fmt::format("/proc/{}/task/{}/children", pid, tid), 1 << 20);
    if (!text) continue;
    for (std::string_view f : split_fields(*text)) {
      if (auto child = parse_int<int>(f)) out.insert(*child);
    }
  }
  return out;
}

// The children a wait4()/waitid() call waits for: one pid, or every child for "any child"
// (wait4 -1, waitid P_ALL). Process-group and pidfd waits are not followed.
std::vector<int> awaited_children(int pid, const std::string& call,
                                  const std::vector<std::uint64_t>& a,
                                  const std::set<int>& children) {
  std::vector<int> out;
  std::optional<std::int64_t> one;
  bool any = false;
  if (call == "wait4") {
    auto which = static_cast<std::int32_t>(a[0]);
    any = which == -1;
    if (which > 0) one = which;
  } else if (call == "waitid") {
    any = a[0] == P_ALL;
    if (a[0] == P_PID) one = static_cast<std::int32_t>(a[1]);
  }
  if (one) {
    auto stat = read_stat(static_cast<int>(*one));
    if (children.count(static_cast<int>(*one)) || (stat && stat->ppid == pid))
      out.push_back(static_cast<int>(*one));
  }
  if (any) {
    for (int c : children) {
      if (out.size() < kMaxChildEdges) out.push_back(c);
    }
  }
  return out;
}

class BlockingWaits {
 public:
  BlockingWaits(JobSnapshot& job, std::string host) : job_(job), host_(std::move(host)) {}

  void run() {
    for (ProcessSnapshot& p : job_.processes) {
      if (p.death || p.threads.empty() || p.core) continue;
      std::set<int> tids;
      for (const ThreadSnapshot& t : p.threads) tids.insert(t.tid);
      std::optional<std::set<int>> children;  // read at the first wait for a child
      for (ThreadSnapshot& t : p.threads) {
        if (!t.waits_on.empty() || !t.syscall || t.syscall_args.size() != 6) continue;
        const std::string& call = *t.syscall;
        if (call == "futex") {
          lock_edge(p, t, tids);
        } else if (call == "wait4" || call == "waitid") {
          if (!children) children = children_of(p.pid, job_);
          for (int c : awaited_children(p.pid, call, t.syscall_args, *children))
            t.waits_on.push_back(
                {host_, c, rank_of(c), fmt::format("child {} ({})", c, call), std::nullopt});
        }
      }
    }
  }

 private:
  void lock_edge(const ProcessSnapshot& p, ThreadSnapshot& t, const std::set<int>& tids) {
    const std::uint64_t address = t.syscall_args[0];
    auto words = read_mutex_words(p.pid, address);
    auto owner = words ? mutex_owner(t.syscall_args, *words, tids, t.tid) : std::nullopt;
    if (owner) {
      t.waits_on.push_back({host_, p.pid, p.rank,
                            fmt::format("mutex {:#x} held by thread {}", address, *owner), owner});
      return;
    }
    if (!p.python || !t.stack_pointer) return;
    // Many threads often wait on one lock (a pool's threads on its queue's lock): one look per
    // lock and process; a lock that is no RLock for one waiter is none for the others.
    auto [seen, fresh] = rlocks_.try_emplace({p.pid, address});
    if (fresh) seen->second = python_rlock_holder(p.pid, t.tid, *t.stack_pointer, address, tids);
    if (auto rlock = seen->second; rlock && rlock->owner_tid != t.tid) {
      t.waits_on.push_back(
          {host_, p.pid, p.rank,
           fmt::format("RLock {:#x} held by thread {}", rlock->object, rlock->owner_tid),
           rlock->owner_tid});
    }
  }

  std::optional<int> rank_of(int pid) const {
    for (const ProcessSnapshot& p : job_.processes) {
      if (p.pid == pid && p.host == host_) return p.rank;
    }
    return std::nullopt;
  }

  JobSnapshot& job_;
  std::string host_;
  std::map<std::pair<int, std::uint64_t>, std::optional<RLockHolder>> rlocks_;  // pid, futex
};

}  // namespace

void resolve_blocking_waits(JobSnapshot& job, const std::string& host) {
  std::string h = host;
  for (const ProcessSnapshot& p : job.processes) {
    if (!h.empty()) break;
    h = p.host;
  }
  BlockingWaits(job, h).run();
}

}  // namespace hangscan
