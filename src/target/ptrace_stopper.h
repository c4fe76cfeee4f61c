// PtraceStopper: stops every thread of a live process, and resumes them, whatever happens.
//
// Why: registers and the top of each stack must be read from a consistent, stopped process,
// but a hang tool must never leave its target stopped. PTRACE_SEIZE + PTRACE_INTERRUPT stop
// threads without sending signals the target could see; /proc/PID/task is re-scanned until
// no new thread appears (a stopped thread cannot create one). The destructor detaches, so an
// error or exception releases the target; if hangscan itself is killed, the kernel detaches.
// SIGINT/SIGTERM/SIGHUP/SIGQUIT are blocked while threads are stopped and delivered after.
#pragma once

#include <sched.h>
#include <signal.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "hangscan/result.h"
#include "target/target.h"
#include "util/deadline.h"

namespace hangscan {

class PtraceStopper : public Freeze {
 public:
  // Stops all threads of `pid`. Threads that cannot be stopped before the deadline (e.g. in
  // uninterruptible sleep) are listed with an error and no registers.
  static Result<std::unique_ptr<PtraceStopper>> stop_all(int pid, const Deadline& deadline);

  ~PtraceStopper() override;
  PtraceStopper(const PtraceStopper&) = delete;
  PtraceStopper& operator=(const PtraceStopper&) = delete;

  const std::vector<FrozenThread>& threads() const override { return threads_; }
  std::int64_t release() override;
  std::int64_t stopped_us() const override { return stopped_us_; }

 private:
  struct Tracee {
    int tid = 0;
    bool stopped = false;
    bool gone = false;
    int pending_signal = 0;   // signal-delivery-stop: re-inject on detach
  };

  explicit PtraceStopper(int pid);
  Status seize_new_threads(const std::vector<int>& tids, bool first_scan);
  void interrupt_from(std::size_t first);
  void wait_for_stops(const Deadline& deadline);
  bool poll_tracee(Tracee& t);
  void read_registers();
  void raise_priority();
  void restore_priority();

  int pid_;
  std::vector<Tracee> tracees_;
  std::vector<FrozenThread> threads_;
  std::int64_t first_stop_us_ = 0;
  std::int64_t stopped_us_ = 0;
  std::int64_t pause_us_ = 0;
  bool released_ = false;
  sigset_t saved_mask_{};
  bool mask_saved_ = false;
  int saved_policy_ = -1;
  sched_param saved_param_{};
  bool priority_raised_ = false;
};

}  // namespace hangscan
