// SeizeReaper: reaps the tracer's exited tracees while one of its PTRACE_SEIZEs is blocked.
//
// Why: when a thread of the target calls execve, the kernel kills the other threads and, holding
// the target's cred_guard_mutex, waits (de_thread, the exec'ing thread in D state) until each is
// released. A thread hangscan already traces becomes a zombie that only its tracer's wait
// releases, while PTRACE_SEIZE of any further thread waits for that same mutex: hangscan and its
// target would wait for each other forever, and no deadline helps a thread stuck in a system
// call. A helper thread that reaps our exited tracees once a seize has taken long breaks the
// cycle: the exec completes, the seize returns (the thread is gone) and the capture goes on to
// report the exec. It is idle (one wake-up per millisecond) while seizes return promptly.
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
  // Starts the helper; without a thread to be had it does nothing (the seize is as before).
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
  // Asks the helper to end, without waiting for it (the destructor joins it). Why: the tracer
  // asks once its seizes are over, inside the pause, and lets it go after the release, so the
  // pause never waits for the helper thread to be scheduled (milliseconds on a loaded node).
  void stop();

 private:
  static std::int64_t now_us();
  void run();
  void reap(const std::vector<int>& tids);

  std::atomic<std::int64_t> seize_since_us_{0};  // 0: no seize under way
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::vector<int> tids_;
  std::vector<ReapedExit> reaped_;
  std::thread thread_;
};

}  // namespace hangscan
