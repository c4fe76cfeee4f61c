#include "target/ptrace_stopper.h"

#include <sched.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <elf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "proc/proc_files.h"

namespace hangscan {

namespace {

constexpr int kMaxScans = 64;

void short_nap() {
  timespec ts{0, 20'000};  // 20 us
  nanosleep(&ts, nullptr);
}

Error ptrace_error(int pid, int err) {
  // An exiting process refuses the seize with EPERM too: that is no permission problem.
  if ((err == EPERM || err == ESRCH) && process_exiting(pid)) return exiting_error(pid, err);
  if (err == EPERM || err == EACCES) {
    return Error(Errc::permission,
                 fmt::format("pid {}: permission denied (ptrace)", pid), err,
                 "run as the process's user or as root; on hardened kernels set "
                 "'sysctl kernel.yama.ptrace_scope=0' (or 1 with the same user); in a container "
                 "add CAP_SYS_PTRACE (docker run --cap-add=SYS_PTRACE)");
  }
  if (err == ESRCH) return Error(Errc::no_such_process, fmt::format("pid {}: no such process", pid), err);
  return Error(Errc::io, fmt::format("pid {}: ptrace: {}", pid, std::strerror(err)), err);
}

}  // namespace

PtraceStopper::PtraceStopper(int pid) : pid_(pid) {}

Result<std::unique_ptr<PtraceStopper>> PtraceStopper::stop_all(int pid, const Deadline& deadline) {
  std::unique_ptr<PtraceStopper> s(new PtraceStopper(pid));
  // Block termination signals while threads are stopped; they are delivered after release.
  sigset_t block;
  sigemptyset(&block);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&block, sig);
  if (pthread_sigmask(SIG_BLOCK, &block, &s->saved_mask_) == 0) s->mask_saved_ = true;

  // PTRACE_SEIZE attaches without stopping: every thread known now is attached before the
  // clock starts, so the pause holds only the interrupts, the copies and the detaches.
  auto first = list_tasks(pid);
  if (!first) return std::move(first).error();
  auto st = s->seize_new_threads(*first, true);
  if (!st) return std::move(st).error();
  s->first_stop_us_ = monotonic_us();
  s->interrupt_from(0);
  s->wait_for_stops(deadline);
  // A thread created before its creator stopped is not in the first list: scan again until
  // a scan finds nobody new (a stopped process cannot create threads).
  for (int scan = 1; scan < kMaxScans && !deadline.expired(); ++scan) {
    auto tids = list_tasks(pid);
    if (!tids) return std::move(tids).error();
    std::vector<int> fresh;
    for (int tid : *tids) {
      bool known = std::any_of(s->tracees_.begin(), s->tracees_.end(),
                               [tid](const Tracee& t) { return t.tid == tid; });
      if (!known) fresh.push_back(tid);
    }
    if (fresh.empty()) break;
    std::size_t from = s->tracees_.size();
    st = s->seize_new_threads(fresh, false);
    if (!st) return std::move(st).error();
    s->interrupt_from(from);
    s->wait_for_stops(deadline);
  }
  s->raise_priority();
  s->read_registers();
  s->stopped_us_ = monotonic_us() - s->first_stop_us_;
  return s;
}

Status PtraceStopper::seize_new_threads(const std::vector<int>& tids, bool first_scan) {
  for (int tid : tids) {
    if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
      int err = errno;
      if (err == ESRCH) continue;  // exited between the scan and the seize
      // A thread that is exiting refuses the seize with EPERM too: only a refusal for the
      // main thread means we may not trace this process at all.
      if (first_scan && tid == pid_) return ptrace_error(pid_, err);
      continue;
    }
    Tracee t;
    t.tid = tid;
    tracees_.push_back(t);
  }
  return Ok{};
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
  if (waitid(P_PID, static_cast<id_t>(t.tid), &si, WSTOPPED | WEXITED | WNOHANG | WNOWAIT | __WALL) != 0) {
    if (errno == ECHILD) t.gone = true;
    return t.gone;
  }
  if (si.si_pid == 0) return false;
  if (si.si_code == CLD_EXITED || si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED) {
    int status = 0;
    waitpid(t.tid, &status, __WALL | WNOHANG);
    t.gone = true;
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
void PtraceStopper::wait_for_stops(const Deadline& deadline) {
  std::size_t next = 0;
  for (;;) {
    while (next < tracees_.size()) {
      Tracee& t = tracees_[next];
      if (!t.stopped && !t.gone) poll_tracee(t);
      if (!t.stopped && !t.gone) break;
      ++next;
    }
    if (next == tracees_.size() || deadline.expired()) return;
    short_nap();
  }
}

void PtraceStopper::read_registers() {
  threads_.clear();
  for (const auto& t : tracees_) {
    if (t.gone) continue;
    FrozenThread ft;
    ft.tid = t.tid;
    if (!t.stopped) {
      ft.error = "could not be stopped before the deadline (uninterruptible sleep?)";
      threads_.push_back(std::move(ft));
      continue;
    }
    Registers regs;
    iovec iov{&regs.raw, sizeof(regs.raw)};
    if (ptrace(PTRACE_GETREGSET, t.tid, reinterpret_cast<void*>(NT_PRSTATUS), &iov) == 0) {
      ft.regs = regs;
    } else {
      ft.error = fmt::format("cannot read registers: {}", std::strerror(errno));
    }
    threads_.push_back(std::move(ft));
  }
}

std::int64_t PtraceStopper::release() {
  if (released_) return pause_us_;
  released_ = true;
  // Threads whose interrupt is still pending get one shared grace period to stop, so they can
  // be detached cleanly. If a stop never comes, the kernel detaches when hangscan exits.
  Deadline grace = Deadline::after(std::chrono::milliseconds(100));
  for (auto& t : tracees_) {
    if (t.gone) continue;
    if (!t.stopped) {
      while (!t.stopped && !t.gone && !grace.expired()) {
        if (!poll_tracee(t)) short_nap();
      }
    }
    ptrace(PTRACE_DETACH, t.tid, nullptr, reinterpret_cast<void*>(static_cast<long>(t.pending_signal)));
  }
  pause_us_ = monotonic_us() - first_stop_us_;
  restore_priority();
  if (mask_saved_) pthread_sigmask(SIG_SETMASK, &saved_mask_, nullptr);
  return pause_us_;
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

PtraceStopper::~PtraceStopper() { release(); }

}  // namespace hangscan
