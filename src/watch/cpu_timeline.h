// CpuTimeline: each process's on-CPU share over the window, per time bucket (the watch page's
// strip under each process, docs/html-report.md).
//
// Why: one share for the whole window hides when a process worked: a rank busy for the first
// half of the window and stuck for the second shows 50%, the same as one that ran at half speed
// throughout. The samples already carry their time; this keeps them per thread in time slots,
// bounded (the slots double in width instead of growing in number), so the watchdog's long
// windows cost the same memory as a short one.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace hangscan {

// CPUs used on average over `ticks` sample periods from per-thread sample counts: each thread
// counts for at most one CPU (a late tick or one at each end of the window gives a thread more
// samples than periods). 0 when there are no periods.
double cpu_share(const std::map<int, std::size_t>& thread_samples, double ticks);

class CpuTimeline {
 public:
  static constexpr std::int64_t kFirstSlotNs = 100'000'000;  // 0.1 s
  static constexpr std::size_t kMaxSlots = 256;              // then the slots double in width
  static constexpr std::size_t kMaxBuckets = 64;             // what a report shows at most
  static constexpr int kMinTicks = 4;                        // sample periods in a bucket at least

  explicit CpuTimeline(std::int64_t start_ns) : start_ns_(start_ns) {}

  // A sample of thread `tid` of process `pid` on CPU at `ts_ns` (CLOCK_MONOTONIC; samples from
  // before the start are not counted).
  void add(int pid, int tid, std::int64_t ts_ns);

  // The width of a report's buckets for a window that ends at `end_ns`, at `hz` samples a
  // second: whole slots, at most kMaxBuckets over the window, each at least kMinTicks sample
  // periods (a bucket of a fifth of a period would show a busy thread as a comb of 0 and 100%).
  std::int64_t bucket_ns(std::int64_t end_ns, int hz) const;

  // The process's CPUs used on average (as cpu_share) in each bucket of bucket_ns() from
  // the start to `end_ns` (the last bucket may be shorter), at `hz` samples a second per thread,
  // rounded to 0.001. One value per bucket, zeros for a process without samples.
  std::vector<double> shares(int pid, std::int64_t end_ns, int hz) const;

 private:
  using Slot = std::map<int, std::uint32_t>;  // tid -> its samples in the slot
  void widen();

  std::int64_t start_ns_;
  std::int64_t slot_ns_ = kFirstSlotNs;
  std::map<int, std::vector<Slot>> procs_;  // pid -> its slots from the start
};

}  // namespace hangscan
