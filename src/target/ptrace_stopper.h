// PtraceStopper: stops every thread of a live process, and resumes them, whatever happens.
//
// Why: registers and the top of each stack must be read from a consistent, stopped process,
// but a hang tool must never leave its target stopped. PTRACE_SEIZE + PTRACE_INTERRUPT stop
// threads without sending signals the target could see; /proc/PID/task is re-scanned until
// no new thread appears (a stopped thread cannot create one). The destructor detaches, so an
// error or exception releases the target; if hangscan itself is killed, the kernel detaches.
// SIGINT/SIGTERM/SIGHUP/SIGQUIT are blocked while threads are stopped and delivered after.
// A thread in uninterruptible sleep (D) cannot stop until its kernel call returns. One found in
// D is not attached while the others are stopped; it is then watched for 20 ms and attached if
// its call returns, else given up unattached (a traced thread whose stop never came would stop
// later, when its call returns, and stay stopped as long as hangscan lives). One that enters D
// after its interrupt is given up after the same grace. So the other threads are captured and
// the pause stays short. A process killed while stopped is noticed (death()).
// Job-control stops (SIGTSTP, SIGTTIN, SIGTTOU) are held back with the termination signals: a
// hangscan stopped by Ctrl-Z would hold every thread of the target stopped until continued.
// An exec by a thread of the target kills the others; a SeizeReaper reaps our exited tracees
// while a seize waits on that exec (otherwise both would wait forever), and an exec seen while
// stopping fails the freeze with exec_error(), one seen later makes executed() true. A tracee
// that an exec killed while stopped is reaped by release(): the exec waits for it.
#pragma once

#include <sched.h>
#include <signal.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "hangscan/result.h"
#include "target/exec_watch.h"
#include "target/seize_reaper.h"
#include "target/target.h"
#include "util/deadline.h"

namespace hangscan {

class PtraceStopper : public Freeze {
 public:
  // Stops all threads of `pid`. Threads that cannot be stopped before the deadline (e.g. in
  // uninterruptible sleep) are listed with an error and no registers.
  // `leave_alone`: threads not to attach at all (the quiet path took them without a stop,
  // capture/quiet_source.h); every other thread, including any found by a re-scan, is stopped.
  // `reaper`: the run's seize reaper (one helper thread for all its freezes); null: one of its
  // own for this freeze.
  // `after_stops` (tests only) runs once the threads stopped, before their registers are read:
  // an exec landing there (its killed tracees' exits not yet reported) is made exact with it.
  static Result<std::unique_ptr<PtraceStopper>> stop_all(
      int pid, const Deadline& deadline, const std::vector<int>& leave_alone = {},
      std::shared_ptr<SeizeReaper> reaper = nullptr, const std::function<void()>& after_stops = {});

  ~PtraceStopper() override;
  PtraceStopper(const PtraceStopper&) = delete;
  PtraceStopper& operator=(const PtraceStopper&) = delete;

  const std::vector<FrozenThread>& threads() const override { return threads_; }
  std::int64_t release() override;
  std::int64_t stopped_us() const override { return stopped_us_; }
  std::string death() override;
  bool executed() override;

 private:
  struct Tracee {
    int tid = 0;
    bool stopped = false;
    bool gone = false;
    bool detached = false;         // by release()
    bool uninterruptible = false;  // seen in D state while its stop was awaited
    int pending_signal = 0;        // signal-delivery-stop: re-inject on detach
    int exit_code = 0;             // when gone: CLD_EXITED / CLD_KILLED / CLD_DUMPED, 0 unknown
    int exit_status = 0;           // the exit status or the signal
  };

  explicit PtraceStopper(int pid);
  Status seize_new_threads(const std::vector<int>& tids, bool first_scan);
  void interrupt_from(std::size_t first);
  void wait_for_stops(const Deadline& deadline);
  void retry_uninterruptible(const Deadline& deadline);
  bool stragglers_all_uninterruptible(std::size_t from);
  bool poll_tracee(Tracee& t);
  void absorb_reaped();
  bool killed_or_vanished();
  Status seize_refused(int err);
  // False when a stopped thread's registers were gone (ESRCH: it was killed since it stopped).
  bool read_registers();
  void block_signals(std::initializer_list<int> signals);
  // `e`, or the exec error when `e` says the process is gone and an exec explains it.
  Error exec_or(Error e);
  static bool detach(Tracee& t);
  void let_go(Tracee& t, const Deadline& grace);
  void let_go_new_leader(const Deadline& grace);
  void raise_priority();
  void restore_priority();

  int pid_;
  ExecMark mark_;
  std::shared_ptr<SeizeReaper> reaper_;  // from stop_all to the release
  std::vector<Tracee> tracees_;
  std::vector<int> uninterruptible_;  // threads in D state when found: not attached
  std::vector<int> leave_alone_;      // sorted: threads taken without a stop, never attached
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
