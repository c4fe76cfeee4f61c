// Job-control stop signals (SIGTSTP, SIGTTIN, SIGTTOU) held back by hangscan's helper threads.
//
// Why: a process-directed Ctrl-Z goes to any thread that does not block it, and its default
// action stops the whole process, the thread that holds a target stopped included: the target's
// threads would stay stopped until hangscan is continued. The freezing thread blocks these
// signals while it holds threads stopped (PtraceStopper) and lets them in after the release;
// helper threads that may run meanwhile block them for good, so a stop waits for the release.
#pragma once

#include <signal.h>

#include <thread>
#include <utility>

namespace hangscan {

// Blocks the job-control stop signals in the calling thread.
inline void block_job_control_stops() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTSTP, SIGTTIN, SIGTTOU}) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

// Starts `fn` on a thread that blocks the job-control stop signals from its first instruction
// (a thread starts with its creator's mask): no moment in which a Ctrl-Z lands on it. Helpers
// that live across captures (a run's file reader and seize reaper) are made this way. Throws
// std::system_error as std::thread does.
template <class F>
std::thread thread_without_job_control_stops(F&& fn) {
  sigset_t set, old;
  sigemptyset(&set);
  for (int sig : {SIGTSTP, SIGTTIN, SIGTTOU}) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  std::thread t;
  try {
    t = std::thread(std::forward<F>(fn));
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return t;
}

}  // namespace hangscan
