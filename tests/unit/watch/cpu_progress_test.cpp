// CpuProgress: CPU time that grew is progress unless the process spun in a wait loop.
#include "watch/cpu_progress.h"

#include <gtest/gtest.h>

namespace hangscan {
namespace {

constexpr std::int64_t kS = 1'000'000'000;

TEST(CpuProgress, GrowthWithoutSamplesIsProgress) {
  CpuProgress cpu;
  cpu.look(7, 100, 10 * kS);
  cpu.look(7, 100, 11 * kS);  // no growth
  EXPECT_EQ(cpu.judge(7, 11 * kS), std::nullopt);
  cpu.look(7, 104, 12 * kS);  // a 40 ms burst the sampler missed
  cpu.look(7, 104, 13 * kS);
  // Not before its samples could have arrived (1.5 s after it ended).
  EXPECT_EQ(cpu.judge(7, 13 * kS), std::nullopt);
  EXPECT_EQ(cpu.judge(7, 14 * kS), 12 * kS);
  EXPECT_EQ(cpu.judge(7, 14 * kS), std::nullopt);  // judged once
  EXPECT_EQ(cpu.judge(8, 14 * kS), std::nullopt);  // never looked at
}

TEST(CpuProgress, SpinningInAWaitLoopIsNot) {
  CpuProgress cpu;
  cpu.look(7, 100, 10 * kS);
  cpu.look(7, 125, 11 * kS);
  cpu.wait_sample(7, 10 * kS + kS / 2);  // inside the interval
  EXPECT_EQ(cpu.judge(7, 13 * kS), std::nullopt);
  cpu.look(7, 150, 12 * kS);  // no sample in it, but one 1.5 s before it began
  EXPECT_EQ(cpu.judge(7, 14 * kS), std::nullopt);
  cpu.look(7, 150, 13 * kS);  // no growth
  cpu.look(7, 175, 15 * kS);  // grew in (13, 15]; the last wait-loop sample is 2.5 s before
  EXPECT_EQ(cpu.judge(7, 17 * kS), 15 * kS);
}

TEST(CpuProgress, LatestOfSeveralIntervals) {
  CpuProgress cpu;
  cpu.look(7, 1, 1 * kS);
  cpu.look(7, 2, 2 * kS);
  cpu.look(7, 3, 3 * kS);
  cpu.look(7, 3, 4 * kS);
  EXPECT_EQ(cpu.judge(7, 5 * kS), 3 * kS);
  cpu.forget(7);
  cpu.look(7, 9, 5 * kS);  // a first look after forget: no interval yet
  EXPECT_EQ(cpu.judge(7, 9 * kS), std::nullopt);
}

}  // namespace
}  // namespace hangscan
