// Since when a thread waits, carried from one dump to the next through a small state file.
//
// Why: a ptrace stop makes every blocked thread run for a moment: its system call is restarted
// (a poll or a timed futex shows "restart_syscall" afterwards, its arguments gone) and the
// scheduler's record behind blocked_s (`se.exec_start`) starts again. So a second `dump` would
// say "blocked 4.1 s" of a thread blocked for minutes, and "arrived within 0.1 s" of ranks that
// arrived seconds apart; and people always dump twice. Until capture stops no blocked thread,
// each dump leaves what it saw of a target (per thread: since when it waited, in which call
// with which arguments, how often it had run) in a file named by the process's identity (pid and
// start time), and the next dump carries the first observation forward for a thread that ran in
// between only for the stops themselves (the scheduler counts the times a thread left a CPU,
// nr_switches in /proc/TID/sched: a ptrace stop of a sleeping thread adds exactly 2, any real
// wake-up 1 more).
//
// The file is data from an earlier run, so it is trusted no further than its identity: the
// directory is the caller's own (root: /run/hangscan/since, else $XDG_RUNTIME_DIR/hangscan/since;
// created 0700, refused when owned by anyone else or open to others), files are opened with
// O_NOFOLLOW relative to it (a planted link is never followed), written to a new file and
// renamed into place (mode 0600), bounded in size and count, and a record is used only when its
// pid, start time and tids match the process captured now.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hangscan/model.h"

namespace hangscan {

// What one dump saw of one blocked thread.
struct SinceThread {
  int tid = 0;
  double since = 0;                 // Unix seconds when its wait began, by the first observation
  double first_seen_at = 0;         // Unix seconds of the dump that first saw it
  std::uint64_t timeslices = 0;     // its runs on a CPU at the first observation
  int stops = 0;                    // ptrace stops since (each adds exactly 2 runs to a sleeper)
  std::string syscall;              // the call it waited in when first seen ("poll", "futex")
  std::vector<std::uint64_t> args;  // its six arguments
};

struct SinceRecord {
  int pid = 0;
  std::uint64_t start_ticks = 0;
  std::vector<SinceThread> threads;
};

// The file's text, and its parser (nullopt for anything that is not exactly such a record).
std::string format_since_record(const SinceRecord& r);
std::optional<SinceRecord> parse_since_record(std::string_view text);

// Carries `earlier` (the record of the same pid and start time, if any) into `p`, captured now
// by `stops` ptrace stops (--samples): a thread found in it, still blocked in the same call (or
// in restart_syscall, whose call and arguments are restored from the record) and run no more
// often than the stops explain, gets the earlier `since` (blocked_s grows,
// blocked_first_seen_at is set). Returns the record to keep.
SinceRecord carry_since(ProcessSnapshot& p, const SinceRecord* earlier, int stops);

// The state directory, opened safely; every operation fails quietly (no state, no carrying).
class SinceStore {
 public:
  // The caller's directory (see above); nullopt when it cannot be made safe.
  static std::optional<SinceStore> open_default();
  SinceStore(SinceStore&& o) noexcept : dir_(o.dir_) { o.dir_ = -1; }
  SinceStore& operator=(SinceStore&&) = delete;
  ~SinceStore();

  std::optional<SinceRecord> load(int pid, std::uint64_t start_ticks) const;
  void save(const SinceRecord& r) const;
  // Drops records of processes that are gone (pid reused or exited) and the oldest beyond the
  // count bound.
  void prune() const;

 private:
  explicit SinceStore(int dir) : dir_(dir) {}
  int dir_ = -1;
};

// Loads, carries and saves the state of every live process of `job` (captured just now, each
// `stops` times).
void carry_since_state(JobSnapshot& job, int stops);

}  // namespace hangscan
