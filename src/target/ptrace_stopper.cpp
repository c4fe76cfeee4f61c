#include "target/ptrace_stopper.h"

#include <elf.h>
#include <sched.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "proc/container_info.h"
#include "proc/proc_files.h"

namespace hangscan {

namespace {

constexpr const char* kUninterruptibleNote =
    "uninterruptible sleep (D state): it cannot be stopped until its kernel call returns, so "
    "its user stack is not shown; its kernel stack is where it waits";

constexpr int kMaxScans = 64;
// A thread still running this long after its interrupt is looked at in /proc: one in D state
// gets kUninterruptibleGraceUs more (a short disk wait ends in that time), then is given up.
constexpr std::int64_t kSlowStopUs = 2'000;
constexpr std::int64_t kUninterruptibleGraceUs = 20'000;
// Threads whose interrupt is still pending at release get this long to stop and be detached.
constexpr auto kReleaseGrace = std::chrono::milliseconds(100);
// A leader that refused the seize gets this long to come back from an exec (docs/security.md).
constexpr auto kStopperExecWait = std::chrono::milliseconds(100);

bool in_uninterruptible_sleep(int pid, int tid) {
  auto st = read_stat(pid, tid);
  return st && st->state == 'D';
}

std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

void short_nap() {
  timespec ts{0, 20'000};  // 20 us
  nanosleep(&ts, nullptr);
}

Error ptrace_error(int pid, int err) {
  // An exiting process refuses the seize with EPERM too: that is no permission problem.
  if ((err == EPERM || err == ESRCH) && process_exiting(pid)) return exiting_error(pid, err);
  if (err == EPERM || err == EACCES) {
    return ptrace_permission_error(pid, " (ptrace)", err, read_ptrace_standing());
  }
  if (err == ESRCH)
    return Error(Errc::no_such_process, fmt::format("pid {}: no such process", pid), err);
  return Error(Errc::io, fmt::format("pid {}: ptrace: {}", pid, std::strerror(err)), err);
}

}  // namespace

PtraceStopper::PtraceStopper(int pid) : pid_(pid) {}

Result<std::unique_ptr<PtraceStopper>> PtraceStopper::stop_all(
    int pid, const Deadline& deadline, const std::vector<int>& leave_alone,
    std::shared_ptr<SeizeReaper> reaper, const std::function<void()>& after_stops) {
  std::unique_ptr<PtraceStopper> s(new PtraceStopper(pid));
  s->leave_alone_ = leave_alone;
  std::sort(s->leave_alone_.begin(), s->leave_alone_.end());
  s->block_signals({SIGTSTP, SIGTTIN, SIGTTOU});
  if (auto mark = exec_mark(pid)) s->mark_ = *mark;
  s->reaper_ = reaper ? std::move(reaper) : std::make_shared<SeizeReaper>();
  s->reaper_->begin_freeze();

  // PTRACE_SEIZE attaches without stopping: every thread known now is attached before the
  // clock starts, so the pause holds only the interrupts, the copies and the detaches.
  auto first = list_tasks(pid);
  if (!first) return s->exec_or(std::move(first).error());
  auto st = s->seize_new_threads(*first, true);
  if (!st) return s->exec_or(std::move(st).error());
  s->block_signals({SIGINT, SIGTERM, SIGHUP, SIGQUIT});
  s->first_stop_us_ = monotonic_us();
  s->interrupt_from(0);
  s->wait_for_stops(deadline);
  s->retry_uninterruptible(deadline);
  // A thread created before its creator stopped is not in the first list: scan again until
  // a scan finds nobody new (a stopped process cannot create threads).
  for (int scan = 1; scan < kMaxScans && !deadline.expired(); ++scan) {
    auto tids = list_tasks(pid);
    if (!tids) return s->exec_or(std::move(tids).error());
    std::vector<int> fresh;
    for (int tid : *tids) {
      bool known = std::binary_search(s->leave_alone_.begin(), s->leave_alone_.end(), tid) ||
                   std::any_of(s->tracees_.begin(), s->tracees_.end(),
                               [tid](const Tracee& t) { return t.tid == tid; }) ||
                   std::find(s->uninterruptible_.begin(), s->uninterruptible_.end(), tid) !=
                       s->uninterruptible_.end();
      if (!known) fresh.push_back(tid);
    }
    if (fresh.empty()) break;
    std::size_t from = s->tracees_.size();
    st = s->seize_new_threads(fresh, false);
    if (!st) return s->exec_or(std::move(st).error());
    s->interrupt_from(from);
    s->wait_for_stops(deadline);
  }
  s->reaper_->end_seizes();  // no more seizes; a reaper of our own is joined after the release
  s->absorb_reaped();
  if (s->executed()) {
    s->release();
    return exec_error(pid, s->mark_);
  }
  s->raise_priority();
  if (after_stops) after_stops();
  // A stopped thread whose registers are gone (ESRCH) was killed since it stopped: by an exec
  // whose exits were not reported yet (the exec waits for our release), or by a death.
  if (!s->read_registers() && wait_out_exec(pid, s->mark_, kStopperExecWait)) {
    s->release();
    return exec_error(pid, s->mark_);
  }
  s->stopped_us_ = monotonic_us() - s->first_stop_us_;
  return s;
}

// Job-control stops are blocked from the first seize, termination signals from the first
// interrupt; both are delivered after release (SIGSTOP cannot be blocked: docs/security.md).
// A stopped hangscan would hold its tracees (a seized thread that gets a signal waits for its
// tracer); a dead one holds nothing (the kernel detaches), and a seize can wait, with no
// deadline, for an exec that another tracer holds (docs/troubleshooting.md): SIGTERM (`timeout`)
// must still end it there. A handled signal would not: the kernel restarts the seize.
void PtraceStopper::block_signals(std::initializer_list<int> signals) {
  sigset_t block;
  sigemptyset(&block);
  for (int sig : signals) sigaddset(&block, sig);
  sigset_t before;
  if (pthread_sigmask(SIG_BLOCK, &block, &before) != 0 || mask_saved_) return;
  saved_mask_ = before;
  mask_saved_ = true;
}

// /proc/PID/task or a seize said the process is gone while the process of that pid and start
// time lives on: that was an exec passing (its old leader and thread ids vanish for a moment).
Error PtraceStopper::exec_or(Error e) {
  if (e.code != Errc::no_such_process) return e;
  release();
  if (wait_out_exec(pid_, mark_, kStopperExecWait)) return exec_error(pid_, mark_);
  return e;
}

Status PtraceStopper::seize_new_threads(const std::vector<int>& tids, bool first_scan) {
  int refused = 0;
  for (int tid : tids) {
    if (std::binary_search(leave_alone_.begin(), leave_alone_.end(), tid)) continue;
    // Not attached: it could not stop before its kernel call returns, and would then stop
    // for as long as hangscan holds it (see the header).
    if (in_uninterruptible_sleep(pid_, tid)) {
      uninterruptible_.push_back(tid);
      continue;
    }
    if (reaper_) reaper_->seize_begins();
    long rc = ptrace(PTRACE_SEIZE, tid, nullptr, nullptr);
    int err = errno;
    if (reaper_) reaper_->seize_ends();
    if (rc != 0) {
      if (err == ESRCH) continue;  // exited between the scan and the seize
      // A thread that is exiting refuses the seize with EPERM too: only a refusal for the
      // main thread (or for every thread) means we may not trace this process at all.
      if (first_scan && tid == pid_) return seize_refused(err);
      refused = err;
      continue;
    }
    if (reaper_) reaper_->traced(tid);
    Tracee t;
    t.tid = tid;
    tracees_.push_back(t);
  }
  absorb_reaped();
  if (first_scan && refused != 0 && tracees_.empty()) return seize_refused(refused);
  return Ok{};
}

// The leader refuses the seize (EPERM) while an exec has made it a zombie, and so does one that
// exited; after the exec it is the exec'ing thread: that is no permission problem.
Status PtraceStopper::seize_refused(int err) {
  release();  // threads seized so far and killed by the exec hold it until they are reaped
  if (wait_out_exec(pid_, mark_, kStopperExecWait)) return exec_error(pid_, mark_);
  return ptrace_error(pid_, err);
}

// Exits the seize reaper reaped are the tracees' exits, as poll_tracee() would have seen them.
void PtraceStopper::absorb_reaped() {
  if (!reaper_) return;
  for (const ReapedExit& r : reaper_->take_reaped()) {
    for (auto& t : tracees_) {
      if (t.tid != r.tid || t.exit_code != 0) continue;
      t.gone = true;
      t.exit_code = r.code;
      t.exit_status = r.status;
    }
  }
}

// A tracee killed by SIGKILL (an exec kills every other thread so) or vanished without an exit.
// Plain thread exits (CLD_EXITED) are no sign of an exec and cost nothing here.
bool PtraceStopper::killed_or_vanished() {
  return std::any_of(tracees_.begin(), tracees_.end(), [](const Tracee& t) {
    return t.gone && (t.exit_code == 0 || (t.exit_code == CLD_KILLED && t.exit_status == SIGKILL));
  });
}

void PtraceStopper::interrupt_from(std::size_t first) {
  for (std::size_t i = first; i < tracees_.size(); ++i) {
    if (ptrace(PTRACE_INTERRUPT, tracees_[i].tid, nullptr, nullptr) != 0 && errno == ESRCH)
      tracees_[i].gone = true;
  }
}

// Peeks at a tracee's state change without consuming it (WNOWAIT). Why: reaping a
// signal-delivery-stop clears the signal in the kernel, so if hangscan were killed before it
// detached with that signal, the target would lose it. Left unconsumed, the kernel still
// delivers it when it detaches on our death. Exits are reaped (nothing to lose there).
// Returns false when nothing changed yet.
bool PtraceStopper::poll_tracee(Tracee& t) {
  siginfo_t si{};
  if (waitid(P_PID, static_cast<id_t>(t.tid), &si,
             WSTOPPED | WEXITED | WNOHANG | WNOWAIT | __WALL) != 0) {
    if (errno == ECHILD) t.gone = true;
    return t.gone;
  }
  if (si.si_pid == 0) return false;
  if (si.si_code == CLD_EXITED || si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED) {
    int status = 0;
    waitpid(t.tid, &status, __WALL | WNOHANG);
    t.gone = true;
    t.exit_code = si.si_code;
    t.exit_status = si.si_status;
    return true;
  }
  if (si.si_code != CLD_TRAPPED && si.si_code != CLD_STOPPED) return false;
  t.stopped = true;
  int sig = si.si_status & 0xff;
  int event = (si.si_status >> 8) & 0xff;
  if (event == 0 && sig != SIGTRAP && si.si_code == CLD_TRAPPED) t.pending_signal = sig;
  return true;
}

// Threads were interrupted in list order and mostly stop in that order: the scan stops at the
// first thread still running and naps, so waiting costs about one waitid per thread in all
// rather than one per thread per nap (which, at real-time priority, took CPU time from the very
// threads that had to run to reach their stop).
// A thread that does not stop soon is looked at: when every thread still awaited is in D state,
// they get a short grace and are then given up, so one thread in a kernel call neither holds
// the others stopped for the whole deadline nor hides their stacks.
void PtraceStopper::wait_for_stops(const Deadline& deadline) {
  std::size_t next = 0;
  const std::int64_t start = monotonic_us();
  std::int64_t last_look = start;
  std::int64_t give_up_at = 0;
  for (;;) {
    while (next < tracees_.size()) {
      Tracee& t = tracees_[next];
      if (!t.stopped && !t.gone) poll_tracee(t);
      if (!t.stopped && !t.gone) break;
      ++next;
    }
    if (next == tracees_.size() || deadline.expired()) return;
    std::int64_t now = monotonic_us();
    if (now - start >= kSlowStopUs && now - last_look >= kSlowStopUs / 2) {
      last_look = now;
      if (!stragglers_all_uninterruptible(next)) {
        give_up_at = 0;
      } else if (give_up_at == 0) {
        give_up_at = now + kUninterruptibleGraceUs;
      }
    }
    if (give_up_at != 0 && now >= give_up_at) return;
    short_nap();
  }
}

// Threads that were in D state when found, with every other thread stopped now: one whose
// kernel call returns within a short grace (a disk read) is attached and stopped like the
// rest; the others are given up without ever being attached.
void PtraceStopper::retry_uninterruptible(const Deadline& deadline) {
  const std::int64_t give_up_at = monotonic_us() + kUninterruptibleGraceUs;
  while (!uninterruptible_.empty() && monotonic_us() < give_up_at && !deadline.expired()) {
    std::vector<int> out_of_it;
    std::erase_if(uninterruptible_, [&](int tid) {
      auto st = read_stat(pid_, tid);
      if (st && st->state == 'D') return false;
      if (st) out_of_it.push_back(tid);
      return true;  // out of D, or gone
    });
    if (!out_of_it.empty()) {
      std::size_t from = tracees_.size();
      (void)seize_new_threads(out_of_it, false);  // one back in D returns to the list
      interrupt_from(from);
      wait_for_stops(deadline);
    }
    if (!uninterruptible_.empty()) {
      timespec ts{0, 200'000};  // 200 us between looks
      nanosleep(&ts, nullptr);
    }
  }
}

// Polls every thread from `from` on; true when all that have not stopped are in D state.
bool PtraceStopper::stragglers_all_uninterruptible(std::size_t from) {
  bool all = true;
  for (std::size_t i = from; i < tracees_.size(); ++i) {
    Tracee& t = tracees_[i];
    if (!t.stopped && !t.gone) poll_tracee(t);
    if (t.stopped || t.gone) continue;
    if (!t.uninterruptible) t.uninterruptible = in_uninterruptible_sleep(pid_, t.tid);
    all &= t.uninterruptible;
  }
  return all;
}

bool PtraceStopper::read_registers() {
  threads_.clear();
  bool all_there = true;
  for (const auto& t : tracees_) {
    if (t.gone) continue;
    FrozenThread ft;
    ft.tid = t.tid;
    if (!t.stopped) {
      ft.uninterruptible = t.uninterruptible;
      ft.error =
          t.uninterruptible ? kUninterruptibleNote : "could not be stopped before the deadline";
      threads_.push_back(std::move(ft));
      continue;
    }
    Registers regs;
    iovec iov{&regs.raw, sizeof(regs.raw)};
    if (ptrace(PTRACE_GETREGSET, t.tid, reinterpret_cast<void*>(NT_PRSTATUS), &iov) == 0) {
      ft.regs = regs;
    } else {
      all_there &= errno != ESRCH;
      ft.error = fmt::format("cannot read registers: {}", std::strerror(errno));
    }
    threads_.push_back(std::move(ft));
  }
  for (int tid : uninterruptible_) {
    FrozenThread ft;
    ft.tid = tid;
    ft.uninterruptible = true;
    ft.error = kUninterruptibleNote;
    threads_.push_back(std::move(ft));
  }
  return all_there;
}

std::int64_t PtraceStopper::release() {
  if (released_) return pause_us_;
  released_ = true;
  for (auto& t : tracees_) {
    // A failed detach: the thread was killed since it stopped (an exec kills every other
    // thread), and is reaped below.
    if (!t.gone && t.stopped && !detach(t)) t.stopped = false;
  }
  pause_us_ = monotonic_us() - first_stop_us_;
  // Threads whose interrupt is still pending get one shared grace period to stop, so they can
  // be detached cleanly, and killed ones to exit, so they can be reaped; the others run
  // meanwhile. If a stop never comes, the kernel detaches when hangscan exits.
  Deadline grace = Deadline::after(kReleaseGrace);
  for (auto& t : tracees_) let_go(t, grace);
  let_go_new_leader(grace);
  restore_priority();
  reaper_.reset();
  if (mask_saved_) pthread_sigmask(SIG_SETMASK, &saved_mask_, nullptr);
  return pause_us_;
}

bool PtraceStopper::detach(Tracee& t) {
  t.detached = ptrace(PTRACE_DETACH, t.tid, nullptr,
                      reinterpret_cast<void*>(static_cast<long>(t.pending_signal))) == 0;
  return t.detached;
}

// A tracee that has not stopped yet is detached once it stops; one that was killed is reaped
// once it exits. Why reap: an exec waits (holding the process's cred_guard_mutex) until every
// thread it killed is released, and a killed tracee is released only by its tracer's wait. Left
// a zombie, it held the target in its exec, and hangscan's next PTRACE_SEIZE of it (the quiet
// dump's next attempt) waited for that mutex, both for as long as hangscan lived.
void PtraceStopper::let_go(Tracee& t, const Deadline& grace) {
  while (!t.gone && !t.detached && !grace.expired()) {
    if (t.stopped) {
      if (detach(t)) return;
      t.stopped = false;
    }
    if (!poll_tracee(t)) short_nap();
  }
}

// A tracee that execs takes the leader's tid: its own tid vanished for us (ECHILD) while the
// kernel reports it to us as the leader, which stops there (its interrupt was pending) and
// would stay stopped, never detached, for as long as hangscan lived.
void PtraceStopper::let_go_new_leader(const Deadline& grace) {
  bool vanished = std::any_of(tracees_.begin(), tracees_.end(),
                              [](const Tracee& t) { return t.gone && t.exit_code == 0; });
  bool known = std::any_of(tracees_.begin(), tracees_.end(),
                           [this](const Tracee& t) { return t.tid == pid_ && !t.gone; });
  if (!vanished || known) return;
  auto status = read_status(pid_);
  if (!status || status->tracer_pid != getpid()) return;
  Tracee leader;
  leader.tid = pid_;
  let_go(leader, grace);
}

// The lowest real-time priority is above every normal process: on a node whose CPUs are busy
// (data loaders, other ranks), hangscan is then not preempted while it copies and detaches,
// which would stretch the pause by whole time slices. It is raised only once every thread has
// stopped: before that, the interrupted threads themselves must run (often on hangscan's own
// CPU) to reach their stop, and a real-time hangscan would keep them off it (50 threads: 0.4-1.1
// ms of waiting against 0.1-0.3 ms). Nothing spins at this priority. Without CAP_SYS_NICE this
// fails and the freeze runs at normal priority.
void PtraceStopper::raise_priority() {
  saved_policy_ = sched_getscheduler(0);
  if (saved_policy_ < 0 || saved_policy_ == SCHED_FIFO || saved_policy_ == SCHED_RR) return;
  if (sched_getparam(0, &saved_param_) != 0) return;
  sched_param rt{};
  rt.sched_priority = sched_get_priority_min(SCHED_FIFO);
  priority_raised_ = sched_setscheduler(0, SCHED_FIFO, &rt) == 0;
}

void PtraceStopper::restore_priority() {
  if (!priority_raised_) return;
  sched_setscheduler(0, saved_policy_, &saved_param_);
  priority_raised_ = false;
}

// Exits of stopped threads are reported to us as their tracer (two passes: a leader's only once
// the others are reaped); an exec shows as tracees killed by SIGKILL while the process lives on.
// The usual answer (nobody exited) costs one waitid for all threads.
bool PtraceStopper::executed() {
  if (released_) return false;
  siginfo_t si{};
  if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) == 0 && si.si_pid != 0) {
    for (int pass = 0; pass < 2; ++pass) {
      for (auto& t : tracees_) {
        if (!t.gone) poll_tracee(t);
      }
    }
  }
  return killed_or_vanished() && wait_out_exec(pid_, mark_, kStopperExecWait);
}

// Exits of stopped threads are reported to us as their tracer; a thread group leader's only
// once the others are reaped, hence two passes. It runs inside the pause, so the usual answer
// (nobody exited) costs one waitid for all threads.
std::string PtraceStopper::death() {
  if (released_ || executed()) return {};
  siginfo_t si{};
  bool exited = waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) == 0 && si.si_pid != 0;
  if (!exited) {
    // /proc can show the process dead a moment before its tracer is notified (threads still
    // on their way out): then wait for the notification, briefly.
    auto st = read_stat(pid_);
    if (!st || st->state == 'Z' || st->state == 'X') {
      for (int i = 0; i < 200 && !exited; ++i) {
        timespec nap{0, 1'000'000};
        nanosleep(&nap, nullptr);
        si = siginfo_t{};
        exited = waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) == 0 && si.si_pid != 0;
      }
    }
  }
  if (exited) {
    for (int pass = 0; pass < 2; ++pass) {
      for (auto& t : tracees_) {
        if (!t.gone) poll_tracee(t);
      }
    }
  }
  bool all_gone = !tracees_.empty();
  for (const auto& t : tracees_) {
    if (t.gone && (t.exit_code == CLD_KILLED || t.exit_code == CLD_DUMPED)) {
      return fmt::format("was killed by {}", signal_text(t.exit_status));
    }
    all_gone &= t.gone;
  }
  for (const auto& t : tracees_) {
    if (t.tid == pid_ && t.gone && t.exit_code == CLD_EXITED && all_gone) {
      return fmt::format("exited with status {}", t.exit_status);
    }
  }
  if (all_gone || (tracees_.empty() && !read_stat(pid_))) return "ended";
  return {};
}

PtraceStopper::~PtraceStopper() { release(); }

}  // namespace hangscan
