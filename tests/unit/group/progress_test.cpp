#include "group/progress.h"

#include <gtest/gtest.h>

#include "job_builder.h"

namespace hangscan {
namespace {

using namespace hangscan::testing;

JobSnapshot sample(std::uint64_t ticks0, std::uint64_t ticks1, std::uint64_t ticks2, int line2,
                   std::uint64_t poll_offset) {
  JobSnapshot job;
  job.processes.push_back(rank_process(0, 100, in_all_reduce()));
  job.processes.push_back(rank_process(1, 101, in_all_reduce(), 'R'));
  job.processes.push_back(rank_process(
      2, 102, {py("step", "/t/train.py", line2), py("<module>", "/t/train.py", 1)}, 'R'));
  job.processes.push_back(rank_process(
      3, 103,
      {native("poll_inner", "/lib/libmpi.so", poll_offset),
       native("PMPI_Allreduce", "/lib/libmpi.so", 0x900), native("main", "/bin/app", 0x40)},
      'R'));
  job.processes[0].threads[0].cpu_ticks = ticks0;
  job.processes[1].threads[0].cpu_ticks = ticks1;
  job.processes[2].threads[0].cpu_ticks = ticks2;
  job.processes[3].threads[0].cpu_ticks = ticks1;
  return job;
}

TEST(Progress, StuckBlockedSpinningAndProgressing) {
  std::vector<JobSnapshot> samples = {sample(1000, 5000, 100, 10, 0x10),
                                      sample(1001, 5090, 150, 11, 0x20),
                                      sample(1002, 5180, 200, 12, 0x10)};
  samples[1].processes[3].threads[0].frames[0].function = "poll_other";  // the poll loop moves
  samples[2].processes.pop_back();
  samples[2].processes.push_back(sample(0, 5180, 0, 0, 0x10).processes[3]);
  auto progress = compute_progress(samples, 0.5, 100);
  ASSERT_EQ(progress.size(), 4u);
  EXPECT_TRUE(progress[0].stuck);
  EXPECT_DOUBLE_EQ(progress[0].cpu_percent, 2.0);  // 2 ticks over 1 s at 100 Hz
  EXPECT_FALSE(progress[0].spinning());
  EXPECT_TRUE(progress[1].stuck);
  EXPECT_DOUBLE_EQ(progress[1].cpu_percent, 180.0);
  EXPECT_TRUE(progress[1].spinning());
  EXPECT_FALSE(progress[2].stuck);
  EXPECT_DOUBLE_EQ(progress[2].cpu_percent, 100.0);
  EXPECT_TRUE(progress[3].stuck);  // only the innermost native frame moved
  EXPECT_EQ(progress[3].samples, 3);

  JobSnapshot last = samples.back();
  apply_progress(last, progress);
  EXPECT_EQ(last.processes[0].progress, "stuck");
  EXPECT_EQ(progress_word(last.processes[0]), "blocked");
  EXPECT_EQ(progress_word(last.processes[1]), "spinning");
  EXPECT_EQ(last.processes[2].progress, "progressing");
  EXPECT_EQ(progress_word(last.processes[2]), "progressing");
}

TEST(Progress, LocalsDoNotTurnASpinningLoopIntoProgress) {
  // Rank 1 spins on one line (90 ticks a sample at 100 Hz): its counter moves, its line does not.
  std::vector<JobSnapshot> samples = {sample(0, 0, 0, 10, 0), sample(0, 90, 0, 10, 0)};
  samples[0].processes[1].threads[0].frames[1].locals = {{"i", "41"}};
  samples[1].processes[1].threads[0].frames[1].locals = {{"i", "42"}};
  auto progress = compute_progress(samples, 1.0, 100);
  EXPECT_TRUE(progress[1].stuck);
  EXPECT_TRUE(progress[1].spinning());
  EXPECT_TRUE(progress[2].stuck);
  EXPECT_DOUBLE_EQ(progress[2].cpu_percent, 0.0);
}

TEST(Progress, NeedsTwoSamplesAndAClock) {
  EXPECT_TRUE(compute_progress({}, 1.0, 100).empty());
  EXPECT_TRUE(compute_progress({sample(0, 0, 0, 1, 0)}, 1.0, 100).empty());
  auto p = compute_progress({sample(0, 0, 0, 1, 0), sample(5, 0, 0, 1, 0)}, 0.0, 100);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_LT(p[0].cpu_percent, 0);
  EXPECT_FALSE(p[0].spinning());
}

}  // namespace
}  // namespace hangscan
