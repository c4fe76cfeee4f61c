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

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

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
  auto sched = read_thread_sched(clock, getpid(), tid, st->state, st->processor);
  auto s = sched.blocked_s;
  // The switches counted by the kernel's other record, read while the thread still sleeps.
  auto status = read_text_file(fmt::format("/proc/{}/task/{}/status", getpid(), tid.load()));
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  ASSERT_TRUE(s);
  double expected = (now - before) / 1e3;
  EXPECT_NEAR(*s, expected, 0.02) << "cpu " << st->processor;
  ASSERT_TRUE(status && sched.switches);
  std::uint64_t sum = 0;
  for (std::string_view key : {"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"}) {
    auto at = status->find(std::string("\n") + std::string(key));
    ASSERT_NE(at, std::string::npos);
    sum += std::stoull(status->substr(at + key.size() + 1));
  }
  EXPECT_EQ(*sched.switches, sum);
  blocked.join();
}

TEST(SchedClock, NrSwitchesFromTheSchedText) {
  EXPECT_EQ(parse_nr_switches("x (1, #threads: 1)\n----\nnr_switches                 :   1149\n"
                              "nr_voluntary_switches       :    929\n"),
            1149u);
  EXPECT_EQ(parse_nr_switches("nr_voluntary_switches : 929\nnr_switches : 7\n"), 7u);
  EXPECT_FALSE(parse_nr_switches("nr_voluntary_switches : 929\n"));
  EXPECT_FALSE(parse_nr_switches("nr_switches : -1\n"));
  EXPECT_FALSE(parse_nr_switches(""));
}

TEST(SchedClock, RunningThreadHasNone) {
  RunQueueClock clock;
  auto sched = read_thread_sched(clock, getpid(), getpid(), 'R', 0);
  EXPECT_FALSE(sched.blocked_s);
  EXPECT_FALSE(sched.switches);
}

}  // namespace
}  // namespace hangscan
