// SeizeReaper: reaps the tracer's exited tracees while one of its PTRACE_SEIZEs is blocked.
//
// Why: when a thread of the target calls execve, the kernel kills the other threads and, holding
// the target's cred_guard_mutex, waits (de_thread, the exec'ing thread in D state) until each is
// released. A thread hangscan already traces becomes a zombie that only its tracer's wait
// releases, while PTRACE_SEIZE of any further thread waits for that same mutex: hangscan and its
// target would wait for each other forever, and no deadline helps a thread stuck in a system
// call. A helper thread that reaps our exited tracees once a seize has taken long breaks the
// cycle: the exec completes, the seize returns (the thread is gone) and the capture goes on to
// report the exec. It looks once per millisecond while a freeze seizes, and sleeps without a
// wake-up between freezes: one reaper serves every freeze of a run (one freeze at a time), so
// a dump of 8 ranks starts one helper thread, not 8.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace hangscan {

// An exit the helper reaped: as waitid(2) reported it.
struct ReapedExit {
  int tid = 0;
  int code = 0;    // CLD_EXITED / CLD_KILLED / CLD_DUMPED
  int status = 0;  // the exit status or the signal
};

class SeizeReaper {
 public:
  // Starts the helper, armed as if begin_freeze() had been called; without a thread to be had
  // it does nothing (the seize is as before).
  SeizeReaper();
  ~SeizeReaper();
  SeizeReaper(const SeizeReaper&) = delete;
  SeizeReaper& operator=(const SeizeReaper&) = delete;

  // The tracer brackets each PTRACE_SEIZE with these, and registers each thread it traces.
  void seize_begins() { seize_since_us_.store(now_us(), std::memory_order_relaxed); }
  void seize_ends() { seize_since_us_.store(0, std::memory_order_relaxed); }
  void traced(int tid);
  // The exits the helper reaped since the last call.
  std::vector<ReapedExit> take_reaped();
  // A freeze begins: the tracees and exits of the one before are forgotten and the helper looks
  // again while seizes are under way.
  void begin_freeze();
  // The freeze's seizes are over: the helper sleeps until the next begin_freeze(). Only a reap
  // under way is waited for, never the helper's scheduling, so the pause does not wait for a
  // thread to run (milliseconds on a loaded node); the destructor ends and joins it.
  void end_seizes();

 private:
  static std::int64_t now_us();
  void run();
  void reap(const std::vector<int>& tids);

  std::atomic<std::int64_t> seize_since_us_{0};  // 0: no seize under way
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable reaped_once_;  // a reap under way ended
  bool stop_ = false;
  bool armed_ = true;     // between begin_freeze() and end_seizes()
  bool reaping_ = false;  // the helper runs reap() (outside the lock)
  std::vector<int> tids_;
  std::vector<ReapedExit> reaped_;
  std::thread thread_;
};

}  // namespace hangscan
