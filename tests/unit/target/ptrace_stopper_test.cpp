// PtraceStopper on real child processes: a death while stopped is seen (death()), and a thread in
// uninterruptible sleep is neither attached nor waited for.
#include "target/ptrace_stopper.h"

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "proc/proc_files.h"

namespace hangscan {
namespace {

using namespace std::chrono_literals;

// A forked child, killed and reaped when the test ends. `vfork_parent`: the child vforks a
// grandchild that blocks, so the child's only thread sits in D state.
class Kid {
 public:
  explicit Kid(bool vfork_parent) {
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      alarm(60);
      if (vfork_parent && vfork() == 0) {
        for (;;) syscall(SYS_pause);
      }
      for (;;) pause();
    }
    setpgid(pid_, pid_);
  }
  ~Kid() {
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  Kid(const Kid&) = delete;
  Kid& operator=(const Kid&) = delete;
  int pid() const { return pid_; }

  // Waits (deadline 10 s) until the child's main thread is in `state`.
  bool reaches(char state) const {
    auto end = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < end) {
      auto st = read_stat(pid_);
      if (st && st->state == state) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

 private:
  int pid_ = -1;
};

TEST(PtraceStopper, LivingProcessHasNoDeath) {
  Kid kid(false);
  ASSERT_TRUE(kid.reaches('S'));
  auto s = PtraceStopper::stop_all(kid.pid(), Deadline::after(3000ms));
  ASSERT_TRUE(s.ok()) << s.error().what();
  ASSERT_EQ((*s)->threads().size(), 1u);
  EXPECT_TRUE((*s)->threads()[0].regs.has_value());
  EXPECT_EQ((*s)->death(), "");
  (*s)->release();
  EXPECT_TRUE(kid.reaches('S'));
}

TEST(PtraceStopper, KilledWhileStoppedIsSeen) {
  Kid kid(false);
  ASSERT_TRUE(kid.reaches('S'));
  auto s = PtraceStopper::stop_all(kid.pid(), Deadline::after(3000ms));
  ASSERT_TRUE(s.ok()) << s.error().what();
  ASSERT_EQ(kill(kid.pid(), SIGKILL), 0);
  // The death reaches the tracer asynchronously: death() is asked until it answers (bounded).
  std::string how;
  for (int i = 0; i < 5000 && how.empty(); ++i) {
    how = (*s)->death();
    if (how.empty()) std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(how, "was killed by SIGKILL");
}

TEST(PtraceStopper, ThreadInUninterruptibleSleepIsGivenUpAtOnce) {
  Kid kid(true);
  ASSERT_TRUE(kid.reaches('D'));
  auto t0 = std::chrono::steady_clock::now();
  auto s = PtraceStopper::stop_all(kid.pid(), Deadline::after(3000ms));
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(s.ok()) << s.error().what();
  EXPECT_LT(took, 500ms);
  ASSERT_EQ((*s)->threads().size(), 1u);
  const FrozenThread& ft = (*s)->threads()[0];
  EXPECT_EQ(ft.tid, kid.pid());
  EXPECT_TRUE(ft.uninterruptible);
  EXPECT_FALSE(ft.regs.has_value());
  EXPECT_EQ(
      ft.error,
      "uninterruptible sleep (D state): it cannot be stopped until its kernel call returns, so "
      "its user stack is not shown; its kernel stack is where it waits");
  EXPECT_EQ((*s)->death(), "");
  (*s)->release();
  // Never attached: nobody traces it, and it is still in its vfork wait.
  auto status = read_status(kid.pid());
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->tracer_pid, 0);
  EXPECT_TRUE(kid.reaches('D'));
}

}  // namespace
}  // namespace hangscan
