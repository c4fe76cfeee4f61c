// SeizeReaper on real tracees: once a seize is slow it reaps exited tracees, and leaves a
// tracee's ptrace stop to the tracer (the kernel reports a tracee's stops to its tracer even to
// a wait without WSTOPPED; consuming one lost that thread from the capture, found by a dump of
// a job-control-stopped MPI rank under load).
#include "target/seize_reaper.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace hangscan {
namespace {

using namespace std::chrono_literals;

// A forked child that this test traces; killed and reaped when the test ends.
class Tracee {
 public:
  explicit Tracee(bool exits) {
    pid_ = fork();
    if (pid_ == 0) {
      alarm(60);
      if (exits) {
        // Exits only once traced, so the exit is reported to the tracer.
        while (getppid() != 1 && !traced()) usleep(1000);
        _exit(7);
      }
      for (;;) pause();
    }
  }
  ~Tracee() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, __WALL);
  }
  Tracee(const Tracee&) = delete;
  Tracee& operator=(const Tracee&) = delete;
  int pid() const { return pid_; }

 private:
  static bool traced() {
    char line[256];
    FILE* f = fopen("/proc/self/status", "r");
    if (f == nullptr) return false;
    bool yes = false;
    while (fgets(line, sizeof(line), f) != nullptr) {
      int tracer = 0;
      if (sscanf(line, "TracerPid: %d", &tracer) == 1) yes = tracer != 0;
    }
    fclose(f);
    return yes;
  }
  int pid_ = -1;
};

// Waits (deadline 10 s) until waitid sees a state change of `pid` (without consuming it).
bool changes(int pid, siginfo_t& si) {
  auto end = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < end) {
    si = siginfo_t{};
    if (waitid(P_PID, static_cast<id_t>(pid), &si,
               WEXITED | WSTOPPED | WNOHANG | WNOWAIT | __WALL) == 0 &&
        si.si_pid != 0)
      return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

TEST(SeizeReaper, ReapsAnExitButLeavesAStopToTheTracer) {
  Tracee stopped(false);
  Tracee exiting(true);
  ASSERT_EQ(ptrace(PTRACE_SEIZE, stopped.pid(), nullptr, nullptr), 0);
  ASSERT_EQ(ptrace(PTRACE_INTERRUPT, stopped.pid(), nullptr, nullptr), 0);
  siginfo_t si{};
  ASSERT_TRUE(changes(stopped.pid(), si));
  ASSERT_EQ(si.si_code, CLD_TRAPPED);

  SeizeReaper reaper;
  reaper.traced(stopped.pid());  // looked at first, on every round
  reaper.traced(exiting.pid());
  reaper.seize_begins();  // a seize "under way" from now on: the helper looks after 2 ms
  ASSERT_EQ(ptrace(PTRACE_SEIZE, exiting.pid(), nullptr, nullptr), 0);
  std::vector<ReapedExit> reaped;
  auto end = std::chrono::steady_clock::now() + 10s;
  while (reaped.empty() && std::chrono::steady_clock::now() < end) {
    reaped = reaper.take_reaped();
    std::this_thread::sleep_for(1ms);
  }
  reaper.seize_ends();
  ASSERT_EQ(reaped.size(), 1u);
  EXPECT_EQ(reaped[0].tid, exiting.pid());
  EXPECT_EQ(reaped[0].code, CLD_EXITED);
  EXPECT_EQ(reaped[0].status, 7);
  // The stop is still there for the tracer to see.
  ASSERT_TRUE(changes(stopped.pid(), si));
  EXPECT_EQ(si.si_code, CLD_TRAPPED);
  EXPECT_EQ(ptrace(PTRACE_DETACH, stopped.pid(), nullptr, nullptr), 0);
}

// Waits (deadline 10 s) for the reaper to report an exit.
std::vector<ReapedExit> reaped_within_10s(SeizeReaper& reaper) {
  std::vector<ReapedExit> reaped;
  auto end = std::chrono::steady_clock::now() + 10s;
  while (reaped.empty() && std::chrono::steady_clock::now() < end) {
    reaped = reaper.take_reaped();
    std::this_thread::sleep_for(1ms);
  }
  return reaped;
}

// One reaper serves the freezes of a run one after the other: each freeze's exits are its own,
// and between freezes the helper reaps nothing (an exit then is the tracer's to see).
TEST(SeizeReaper, ServesFreezesOneAfterTheOtherAndSleepsBetween) {
  SeizeReaper reaper;
  Tracee first(true);
  reaper.begin_freeze();
  reaper.traced(first.pid());
  reaper.seize_begins();
  ASSERT_EQ(ptrace(PTRACE_SEIZE, first.pid(), nullptr, nullptr), 0);
  auto reaped = reaped_within_10s(reaper);
  reaper.seize_ends();
  reaper.end_seizes();
  ASSERT_EQ(reaped.size(), 1u);
  EXPECT_EQ(reaped[0].tid, first.pid());

  // Between freezes: a slow "seize" of a traced exiting child is not looked at.
  Tracee between(true);
  reaper.traced(between.pid());
  reaper.seize_begins();
  ASSERT_EQ(ptrace(PTRACE_SEIZE, between.pid(), nullptr, nullptr), 0);
  siginfo_t si{};
  ASSERT_TRUE(changes(between.pid(), si));
  EXPECT_EQ(si.si_code, CLD_EXITED);
  std::this_thread::sleep_for(20ms);  // ten times the reaper's slow-seize threshold
  reaper.seize_ends();
  EXPECT_TRUE(reaper.take_reaped().empty());
  ASSERT_TRUE(changes(between.pid(), si));  // still there for the tracer
  EXPECT_EQ(si.si_code, CLD_EXITED);

  // The next freeze forgets the tracees of the one before and reaps its own.
  Tracee second(true);
  reaper.begin_freeze();
  reaper.traced(second.pid());
  reaper.seize_begins();
  ASSERT_EQ(ptrace(PTRACE_SEIZE, second.pid(), nullptr, nullptr), 0);
  reaped = reaped_within_10s(reaper);
  reaper.seize_ends();
  reaper.end_seizes();
  ASSERT_EQ(reaped.size(), 1u);
  EXPECT_EQ(reaped[0].tid, second.pid());
  EXPECT_EQ(reaped[0].code, CLD_EXITED);
  EXPECT_EQ(reaped[0].status, 7);
  EXPECT_TRUE(changes(between.pid(), si));  // `between` was not the second freeze's
}

}  // namespace
}  // namespace hangscan
