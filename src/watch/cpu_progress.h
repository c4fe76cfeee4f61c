// CpuProgress: the watchdog's progress that on-CPU samples miss, from the process's CPU time.
//
// Why: samples come at 19 Hz per CPU, so a rank that works 40 ms every 2 s is sampled about
// once in 20 s (a timeline held 2 samples in 21 s) and the watchdog called a working job
// stalled. Its CPU time (utime+stime, /proc/PID/stat) grows at each burst. CPU time alone is
// no proof of work: a rank spinning in a wait or poll loop (NCCL, MPI progress, sched_yield)
// burns CPU while the job is hung, and such a loop at any real CPU share is sampled densely.
// So CPU time that grew counts as progress only when no sample of the process in a wait loop
// fell in the interval or the 2 s before it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace hangscan {

class CpuProgress {
 public:
  // A wait-loop sample within this much before a CPU interval makes the interval a spin.
  static constexpr std::int64_t kSpinLookbackNs = 2'000'000'000;
  // An interval is judged only this long after it ended: the recorder delivers its samples
  // up to a second late (it drains the ring buffer once a second), and an interval judged
  // before its wait-loop samples arrived would make a spinning rank look busy.
  static constexpr std::int64_t kSettleNs = 1'500'000'000;

  // A look at the process's CPU time (`ticks`: utime+stime) at `now_ns` (CLOCK_MONOTONIC).
  void look(int pid, std::uint64_t ticks, std::int64_t now_ns);
  // A sample of the process in a wait or poll loop (in_wait_loop), taken at `ts_ns`.
  void wait_sample(int pid, std::int64_t ts_ns);
  // The end of the latest interval, ended kSettleNs before `now_ns`, in which the process's
  // CPU time grew and it did not spin, judged from the looks and the samples given so far;
  // nullopt when none. Judged intervals are not judged again.
  std::optional<std::int64_t> judge(int pid, std::int64_t now_ns);
  void forget(int pid) { procs_.erase(pid); }

 private:
  struct State {
    std::optional<std::uint64_t> ticks;  // at the last look
    std::int64_t looked_ns = 0;
    std::vector<std::pair<std::int64_t, std::int64_t>> grew;  // (from, to]: not yet judged
    std::vector<std::int64_t> waits;                          // wait-loop samples, recent
  };
  std::map<int, State> procs_;
};

}  // namespace hangscan
