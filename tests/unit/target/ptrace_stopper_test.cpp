// PtraceStopper on real child processes: a death while stopped is seen (death()), a thread in
// uninterruptible sleep is neither attached nor waited for, and an exec by a thread left alone
// while others are stopped completes once they are released.
#include "target/ptrace_stopper.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pthread.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>
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

// A forked child of three threads: main (pause), "stays" (blocked in read: the one to stop) and
// "execs" (blocked in read on `go`, then execve of /bin/true: the kernel kills the other two and
// waits until each is released). Killed and reaped when the test ends.
class ExecKid {
 public:
  ExecKid() {
    int tids[2];
    if (pipe(go_) != 0 || pipe(tids) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      alarm(60);
      close(go_[1]);
      close(tids[0]);
      tid_pipe_ = tids[1];
      pthread_t t;
      pthread_create(&t, nullptr, &ExecKid::stays, this);
      pthread_create(&t, nullptr, &ExecKid::execs, this);
      for (;;) pause();
    }
    setpgid(pid_, pid_);
    close(go_[0]);
    close(tids[1]);
    for (int i = 0; i < 2; ++i) {  // {which, tid} from each thread, in any order
      int said[2] = {-1, -1};
      if (read(tids[0], said, sizeof said) == sizeof said && (said[0] == 0 || said[0] == 1))
        tid_[said[0]] = said[1];
    }
    close(tids[0]);
  }
  ~ExecKid() {
    close(go_[1]);
    kill(-pid_, SIGKILL);
    for (int tid : tid_) waitpid(tid, nullptr, __WALL | WNOHANG);  // a tracee left to us
    waitpid(pid_, nullptr, 0);
  }
  ExecKid(const ExecKid&) = delete;
  ExecKid& operator=(const ExecKid&) = delete;
  int pid() const { return pid_; }
  int staying_tid() const { return tid_[0]; }
  int execing_tid() const { return tid_[1]; }
  bool start_exec() const { return write(go_[1], "x", 1) == 1; }

  // Waits (deadline 10 s) until thread `tid` is in `state`.
  bool thread_reaches(int tid, char state) const {
    auto end = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < end) {
      auto st = read_stat(pid_, tid);
      if (st && st->state == state) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }
  // Waits until the child, now /bin/true, has exited (true) or `within` passed (false).
  bool exits_within(std::chrono::milliseconds within) {
    auto end = std::chrono::steady_clock::now() + within;
    int status = 0;
    while (std::chrono::steady_clock::now() < end) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) return WIFEXITED(status);
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

 private:
  void say_tid(int which) const {
    int said[2] = {which, static_cast<int>(syscall(SYS_gettid))};
    (void)!write(tid_pipe_, said, sizeof said);  // one write under PIPE_BUF: atomic
  }
  static void* stays(void* self) {
    auto* k = static_cast<ExecKid*>(self);
    k->say_tid(0);
    for (;;) pause();
  }
  static void* execs(void* self) {
    auto* k = static_cast<ExecKid*>(self);
    k->say_tid(1);
    char c = 0;
    if (read(k->go_[0], &c, 1) == 1) execl("/bin/true", "true", nullptr);
    _exit(3);
  }
  int pid_ = -1;
  int go_[2] = {-1, -1};
  int tid_pipe_ = -1;
  int tid_[2] = {-1, -1};
};

// The quiet dump stops only the threads that run and leaves the sleeping ones alone; one of
// those may exec while the others are stopped. The exec kills the stopped tracees, and the kernel
// completes it only once their tracer has reaped them: release() must, or the target hangs in its
// exec (and hangscan's next PTRACE_SEIZE of it with it) for as long as hangscan lives.
TEST(PtraceStopper, ExecByAThreadLeftAloneCompletesAfterRelease) {
  ExecKid kid;
  ASSERT_GT(kid.execing_tid(), 0);
  ASSERT_TRUE(kid.thread_reaches(kid.execing_tid(), 'S'));
  ASSERT_TRUE(kid.thread_reaches(kid.staying_tid(), 'S'));
  auto s =
      PtraceStopper::stop_all(kid.pid(), Deadline::after(3000ms), {kid.pid(), kid.execing_tid()});
  ASSERT_TRUE(s.ok()) << s.error().what();
  ASSERT_EQ((*s)->threads().size(), 1u);
  EXPECT_EQ((*s)->threads()[0].tid, kid.staying_tid());
  ASSERT_TRUE(kid.start_exec());
  // The exec has killed the stopped thread: a zombie only its tracer releases.
  ASSERT_TRUE(kid.thread_reaches(kid.staying_tid(), 'Z'));
  auto t0 = std::chrono::steady_clock::now();
  (*s)->release();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 500ms);
  EXPECT_TRUE(kid.exits_within(3000ms)) << "the exec did not complete after release";
}

// An exec that kills the stopped threads after they stopped and before their registers are read
// (their exits not yet reported): the registers are gone (ESRCH). That is the exec, named as such
// with the new program, not a process whose threads "could not be stopped" (gcore said so).
TEST(PtraceStopper, ExecBeforeTheRegistersAreReadIsAnExec) {
  ExecKid kid;
  ASSERT_GT(kid.execing_tid(), 0);
  ASSERT_TRUE(kid.thread_reaches(kid.execing_tid(), 'S'));
  ASSERT_TRUE(kid.thread_reaches(kid.staying_tid(), 'S'));
  bool killed = false;
  auto s = PtraceStopper::stop_all(
      kid.pid(), Deadline::after(3000ms), {kid.pid(), kid.execing_tid()}, nullptr,
      [&] { killed = kid.start_exec() && kid.thread_reaches(kid.staying_tid(), 'Z'); });
  ASSERT_TRUE(killed);
  ASSERT_FALSE(s.ok()) << "registers of " << (*s)->threads().size() << " thread(s)";
  // Named ("now true") only when seen complete: /bin/true may have ended by then.
  const std::string said = s.error().what();
  const std::string head =
      fmt::format("pid {} executed a new program during the capture (exec)", kid.pid());
  const std::string tail = ": what was being copied belonged to the old one";
  EXPECT_TRUE(said == head + tail || said == head + ", now true" + tail) << said;
  EXPECT_TRUE(kid.exits_within(3000ms)) << "the exec did not complete after release";
}

// True once process `pid`'s main thread is inside system call `nr` (deadline 10 s).
bool reaches_syscall(int pid, long nr) {
  auto end = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < end) {
    std::string text = read_text_file(fmt::format("/proc/{}/syscall", pid)).value_or("");
    if (text.starts_with(fmt::format("{} ", nr))) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

// A PTRACE_SEIZE waits, with no deadline, for an exec that another tracer holds (here: this
// test traces the thread the exec killed and does not reap it). SIGTERM (`timeout`) must still
// end hangscan then: signals are blocked only once threads are stopped, not while seizing.
TEST(PtraceStopper, TerminationEndsASeizeThatWaitsForAnExec) {
  ExecKid kid;
  ASSERT_GT(kid.staying_tid(), 0);
  ASSERT_TRUE(kid.thread_reaches(kid.staying_tid(), 'S'));
  ASSERT_EQ(ptrace(PTRACE_SEIZE, kid.staying_tid(), nullptr, nullptr), 0);
  ASSERT_TRUE(kid.start_exec());
  ASSERT_TRUE(kid.thread_reaches(kid.staying_tid(), 'Z'));  // killed, held by us: the exec waits
  pid_t seizer = fork();
  if (seizer == 0) {
    auto s = PtraceStopper::stop_all(kid.pid(), Deadline::after(3000ms));
    _exit(s.ok() ? 0 : 1);
  }
  ASSERT_GT(seizer, 0);
  EXPECT_TRUE(reaches_syscall(seizer, SYS_ptrace));
  kill(seizer, SIGTERM);
  int status = 0;
  bool ended = false;
  for (auto end = std::chrono::steady_clock::now() + 2s;
       !ended && std::chrono::steady_clock::now() < end; std::this_thread::sleep_for(1ms))
    ended = waitpid(seizer, &status, WNOHANG) == seizer;
  if (!ended) {
    kill(seizer, SIGKILL);
    waitpid(seizer, &status, 0);
  }
  EXPECT_TRUE(ended) << "SIGTERM did not end a seize waiting for the exec";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  waitpid(kid.staying_tid(), nullptr, __WALL);  // released: the exec completes
  EXPECT_TRUE(kid.exits_within(3000ms));
}

}  // namespace
}  // namespace hangscan
