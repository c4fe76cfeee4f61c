// CpuTimeline: on-CPU share per time bucket, bounded, each thread at most one CPU.
#include "watch/cpu_timeline.h"

#include <gtest/gtest.h>

namespace hangscan {
namespace {

constexpr std::int64_t kMs = 1'000'000;

TEST(CpuTimeline, SharePerBucketFromEachThreadsSamples) {
  CpuTimeline t(1000 * kMs);
  auto burst = [&](int tid, std::int64_t from_ms, int n) {
    for (int i = 0; i < n; ++i) t.add(7, tid, (from_ms + i * 10) * kMs);
  };
  // 40 Hz: a bucket of 0.1 s has 4 ticks. Thread 1 throughout the first bucket, half the second;
  // threads 1 and 2 throughout the third (two CPUs); thread 1 six times in the fourth (late
  // ticks: still one CPU).
  burst(1, 1000, 4);
  burst(1, 1100, 2);
  burst(1, 1200, 4);
  burst(2, 1250, 4);
  burst(1, 1300, 6);
  t.add(7, 1, 900 * kMs);  // before the start: not counted
  EXPECT_EQ(t.bucket_ns(1450 * kMs, 40), 100 * kMs);
  EXPECT_EQ(t.shares(7, 1450 * kMs, 40), (std::vector<double>{1, 0.5, 2, 1, 0}));
  EXPECT_EQ(t.shares(8, 1450 * kMs, 40), (std::vector<double>{0, 0, 0, 0, 0}));
}

TEST(CpuTimeline, ABucketHoldsFourSamplePeriods) {
  CpuTimeline t(0);
  for (std::int64_t ms = 0; ms < 3000; ms += 500) t.add(3, 3, ms * kMs);  // 2 Hz, 3 s
  EXPECT_EQ(t.bucket_ns(3000 * kMs, 2), 2000 * kMs);
  EXPECT_EQ(t.shares(3, 3000 * kMs, 2), (std::vector<double>{1, 1}));
}

TEST(CpuTimeline, LastBucketIsShorter) {
  CpuTimeline t(0);
  for (std::int64_t ms = 0; ms < 250; ms += 10) t.add(3, 3, ms * kMs);  // 100 Hz, 0.25 s
  EXPECT_EQ(t.shares(3, 250 * kMs, 100), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(t.shares(3, 250 * kMs, 200), (std::vector<double>{0.5, 0.5, 0.5}));
}

TEST(CpuTimeline, LongWindowsWidenTheSlotsAndCapTheBuckets) {
  CpuTimeline t(0);
  // One thread on CPU throughout 100 s at 10 Hz: 0.1-s slots would be 1000.
  for (std::int64_t i = 0; i < 1000; ++i) t.add(5, 5, i * 100 * kMs + 1);
  std::int64_t end = 100'000 * kMs;
  EXPECT_EQ(t.bucket_ns(end, 10), 1600 * kMs);  // slots of 0.4 s, 4 to a bucket
  std::vector<double> shares = t.shares(5, end, 10);
  ASSERT_EQ(shares.size(), 63u);  // the last one 0.8 s
  EXPECT_LE(shares.size(), CpuTimeline::kMaxBuckets);
  EXPECT_EQ(shares, std::vector<double>(63, 1.0));
}

}  // namespace
}  // namespace hangscan
