// Watcher: one `hangscan watch` session: which processes, the recorder, and what it saw.
//
// Why: the CLI's window, the watchdog and the tests drive the same loop: poll the recorder
// (copies only), finish the new stacks through the capture seam while their processes live,
// fold them into per-process aggregates (bounded: distinct stacks, the longest waits), follow
// new processes, and keep when each process last made progress (docs/watch.md, "Stall"):
// a sample outside a wait loop, data moved, or CPU time that grew while it did not spin.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "discovery/discovery.h"
#include "hangscan/result.h"
#include "watch/cpu_progress.h"
#include "watch/cpu_timeline.h"
#include "watch/kernel_symbols.h"
#include "watch/recorder.h"
#include "watch/sample_stacks.h"
#include "watch/watch_report.h"

namespace hangscan {

struct WatchOptions {
  std::vector<int> pids;
  bool subprocesses = false;
  std::string match;
  RecorderOptions recorder;
  std::size_t top_stacks = 5;
  // (The longest waits kept per process: recorder.top_waits, which the kernel side filters by.)
};

class Watcher {
 public:
  // Discovers the processes, starts the recorder (or takes `recorder`, e.g. the ptrace
  // fallback) and watches them. Errors: nothing to watch, or the recorder would not start.
  static Result<std::unique_ptr<Watcher>> start(const WatchOptions& options,
                                                std::unique_ptr<Recorder> recorder,
                                                std::vector<Diagnostic>& diagnostics);

  // Waits up to `timeout` for records, then finishes and folds what arrived.
  Status step(std::chrono::milliseconds timeout);
  // Finishes and folds what was polled so far (the stall check's progress is then current).
  void flush();
  // Everything so far (what is pending is finished first), with the waits in progress now.
  WatchReport report();
  // CLOCK_MONOTONIC ns of the last progress of each watched process (its start if none yet).
  const std::map<int, std::int64_t>& last_progress() const { return last_progress_; }
  std::vector<int> pids() const;
  // The processes whose progress decides a stall: the ranks, or every process when none is one.
  std::vector<int> rank_pids() const;
  bool all_gone() const;

 private:
  struct StackCount {
    std::vector<Frame> frames;
    bool incomplete = false;
    std::size_t samples = 0;
    bool waits = false;  // in_wait_loop(frames): judged once per distinct stack
  };
  struct Proc {
    DiscoveredProcess discovered;
    std::string comm;
    std::size_t samples = 0;
    std::map<int, std::size_t> thread_samples;  // tid -> its samples
    std::map<std::string, StackCount> stacks;
    std::vector<WaitView> waits;
    std::optional<ProcessExit> exit;
    bool oom_victim = false;  // the OOM killer chose it (an oom event came)
    std::vector<WatchNote> notes;
    std::uint64_t io_jiffies = 0;
    std::optional<std::uint64_t> io_chars;  // /proc/PID/io rchar + wchar at the last look
    std::uint64_t wait_count = 0;           // the kernel's count of the process's waits
    // When its threads had their recorder state (CLOCK_MONOTONIC ns; 0: from birth, a fork the
    // kernel added): a sleep that began before has no event, /proc tells of it.
    std::int64_t recording_ns = 0;
    bool gone = false;
    // How many more times to look for its interpreter (a program that has just begun, by a
    // fork or an exec, may not have mapped its libpython yet); 0: found, or not Python.
    int python_looks = 0;
  };

  Watcher(const WatchOptions& options, std::unique_ptr<Recorder> recorder);
  void add_process(const DiscoveredProcess& dp);
  // Where its interpreter is goes to the recorder, so its samples copy their Python frames.
  void setup_python(int pid, Proc& p);
  // The process replaced its program at `exec_ns`: its records from before are of a program
  // that is gone, and its interpreter (if any) is the new program's.
  void renew_after_exec(int pid, std::int64_t exec_ns, const std::string& comm, Recording& batch);
  void rediscover();
  // Python frames for the copies of sleeps still going at the end (see walk_sleeping_python).
  void python_of_sleepers(std::vector<WaitRecord>& ongoing, std::int64_t now);
  // `copies`: by tid, the recorder's copies of sleeps that began before the recording.
  void add_blocked_before(int pid, Proc& p, std::int64_t now,
                          const std::map<int, WaitRecord*>& copies);
  void read_counters(std::int64_t now);
  void check_io(std::int64_t now);
  void fold(Recording& batch);
  void fold_waits(int pid, std::vector<WaitRecord*>& waits, std::vector<SampledFrames> frames);
  WaitView wait_view(const WaitRecord& w, SampledFrames frames) const;
  void keep_longest(std::vector<WaitView>& waits) const;
  double since_start(std::int64_t ns) const { return static_cast<double>(ns - start_ns_) / 1e9; }

  WatchOptions options_;
  std::unique_ptr<Recorder> recorder_;
  std::map<int, Proc> procs_;
  std::map<int, std::int64_t> last_progress_;
  std::vector<TimelineEntry> timeline_;
  SampleStacks stacks_;
  CpuProgress cpu_;  // progress by CPU time (watchdog only)
  KernelSymbols kernel_;
  std::int64_t start_ns_ = 0;
  CpuTimeline cpu_time_;  // each process's on-CPU share over time (after start_ns_: uses it)
  std::int64_t last_discovery_ns_ = 0;
  std::int64_t last_fold_ns_ = 0;
  std::int64_t last_io_ns_ = 0;
  Recording pending_;  // polled, not yet finished (finished every 5 s, or on flush())
  std::vector<Diagnostic> diagnostics_;
};

// True when a sample's frames are in a known wait or poll loop (sched_yield, poll, futex,
// MPI/NCCL/gloo progress loops...): on CPU, but not progress (docs/watch.md, "Stall").
bool in_wait_loop(const std::vector<Frame>& frames);

// CLOCK_MONOTONIC now in ns, the recorder's clock.
std::int64_t monotonic_ns();

}  // namespace hangscan
