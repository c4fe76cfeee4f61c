// StopSignals: SIGINT and SIGTERM read through a signalfd, for the commands that end a window
// early and still report (watch, and its Slurm front end that forwards them to srun).
//
// Why: no handler and no global flag; the signals stay blocked while the object lives, so
// threads started meanwhile inherit the block and the signals reach only this fd.
#pragma once

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

namespace hangscan::cli {

class StopSignals {
 public:
  // `extra`: one more stop signal (0: none), e.g. SIGUSR1, which srun forwards to its tasks.
  explicit StopSignals(int extra = 0) {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    if (extra != 0) sigaddset(&set_, extra);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
    fd_ = signalfd(-1, &set_, SFD_NONBLOCK | SFD_CLOEXEC);
  }
  ~StopSignals() {
    if (fd_ >= 0) ::close(fd_);
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // True when a stop signal arrived since the last call (consumes one).
  bool pending() {
    signalfd_siginfo si{};
    return fd_ >= 0 && ::read(fd_, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si));
  }
  int fd() const { return fd_; }

 private:
  sigset_t set_{};
  sigset_t old_{};
  int fd_ = -1;
};

}  // namespace hangscan::cli
