// Blocked time from the scheduler's record, against this process's own clock.
#include "proc/sched_clock.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "proc/proc_files.h"

namespace hangscan {
namespace {

TEST(SchedClock, ParsesExecStart) {
  EXPECT_EQ(parse_exec_start_ms("x (1, #threads: 1)\n-----\nse.exec_start                          "
                                "      :        970657.679782\nse.vruntime : 1\n"),
            970657.679782);
  EXPECT_FALSE(parse_exec_start_ms("se.vruntime : 1\n"));
  EXPECT_FALSE(parse_exec_start_ms("se.exec_start : -3\n"));
  EXPECT_FALSE(parse_exec_start_ms("se.exec_start : \n"));
}

TEST(SchedClock, OffsetOfEveryCpuIsSmallAndStable) {
  RunQueueClock clock;
  for (int cpu = 0; cpu < static_cast<int>(std::thread::hardware_concurrency()); ++cpu) {
    auto a = clock.offset_ms(cpu);
    ASSERT_TRUE(a) << cpu;
    RunQueueClock again;
    auto b = again.offset_ms(cpu);
    ASSERT_TRUE(b);
    EXPECT_NEAR(*a, *b, 2.0) << "cpu " << cpu;  // measured twice: the same clock offset
  }
}

// A thread that sleeps in the kernel for a known time: its blocked time counts from when
// it went to sleep, by the test's own CLOCK_MONOTONIC.
TEST(SchedClock, SleepingThreadAgainstOurClock) {
  std::atomic<int> tid{0};
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<double> before{0};
  std::thread blocked([&] {
    std::unique_lock<std::mutex> lock(mu);
    tid = static_cast<int>(syscall(SYS_gettid));
    before = RunQueueClock::monotonic_ms();
    cv.wait(lock, [&] { return release; });
  });
  while (tid == 0 || before == 0) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  RunQueueClock clock;
  auto st = read_stat(getpid(), tid);
  ASSERT_TRUE(st);
  double now = RunQueueClock::monotonic_ms();
  auto s = thread_blocked_seconds(clock, getpid(), tid, st->state, st->processor);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  ASSERT_TRUE(s);
  double expected = (now - before) / 1e3;
  EXPECT_NEAR(*s, expected, 0.02) << "cpu " << st->processor;
  blocked.join();
}

TEST(SchedClock, RunningThreadHasNone) {
  RunQueueClock clock;
  EXPECT_FALSE(thread_blocked_seconds(clock, getpid(), getpid(), 'R', 0));
}

}  // namespace
}  // namespace hangscan
