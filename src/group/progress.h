// Progress over samples: is each process stuck or moving, and is it burning CPU while stuck?
//
// Why: one snapshot cannot tell a rank that waits forever from one that is slowly working, nor
// a rank spinning at 100% CPU in a poll loop from one blocked in a futex. A few snapshots of
// the same processes (same host, pid) and their CPU tick deltas can.
#pragma once

#include <string>
#include <vector>

#include "hangscan/model.h"

namespace hangscan {

// Stuck at one stack and above this CPU share: "spinning" rather than "blocked".
inline constexpr double kSpinningCpuPercent = 50.0;
// Native-only stacks: a poll loop moves its innermost frames; up to this many innermost frames
// may change between samples while the process still counts as stuck.
inline constexpr std::size_t kInnerSlackFrames = 3;

struct ProcessProgress {
  std::string host;
  int pid = 0;
  int samples = 0;          // samples the process appeared in
  bool stuck = false;       // main stack did not change (see docs/output-schema.md)
  double cpu_percent = -1;  // over first..last appearance; <0 unknown
  bool spinning() const { return stuck && cpu_percent > kSpinningCpuPercent; }
  // Each capture stops and resumes every thread, which the scheduler records as the thread
  // running: later samples would count blocked time from the previous sample. A thread that sat
  // at the same place, using no CPU beyond a tick per stop, in every sample keeps the first
  // sample's figure, carried forward by the time between captures: (tid, blocked_s) for the last
  // sample.
  std::vector<std::pair<int, double>> blocked;
  // Of those threads, the ones whose call the stops restarted ("restart_syscall" in the last
  // sample, which hides what it waits on): the call and arguments of the first sample.
  struct Call {
    int tid = 0;
    std::string syscall;
    std::vector<std::uint64_t> args;
  };
  std::vector<Call> restarted;
};

// One entry per (host, pid) of the first sample that appears in at least two samples.
// `interval_seconds` is the time between consecutive samples; `clock_ticks_per_second` is
// sysconf(_SC_CLK_TCK) of the machine the ticks were read on.
std::vector<ProcessProgress> compute_progress(const std::vector<JobSnapshot>& samples,
                                              double interval_seconds, long clock_ticks_per_second);

// Sets ProcessSnapshot::progress ("stuck" / "progressing") and cpu_percent on the matching
// processes of `job` (usually the last sample, which is the one reported).
void apply_progress(JobSnapshot& job, const std::vector<ProcessProgress>& progress);

// "spinning" / "blocked" for a stuck process with known CPU, "progressing", or "" (unknown);
// what the text writer prints next to a rank.
std::string progress_word(const ProcessSnapshot& p);

}  // namespace hangscan
