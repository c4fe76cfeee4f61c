// How long a thread has been off the CPU, from the scheduler's own record.
//
// Why: "where" a rank waits is half the story of a hang; "since when" is the other half (the
// rank that arrived last at a collective, the one that stopped long before the others). The
// kernel keeps, per thread, the run-queue clock of the moment the thread last stopped running
// (`se.exec_start` in /proc/PID/task/TID/sched). That clock is per CPU and is not
// CLOCK_MONOTONIC: it leaves out steal time (and IRQ time where the kernel accounts it) and is
// not slewed by NTP, so it drifts from CLOCK_MONOTONIC by seconds to minutes over a node's
// uptime. `RunQueueClock` measures that offset once per CPU (a helper thread pinned to the CPU
// wakes up and reads its own record next to CLOCK_MONOTONIC), so a blocked time is the
// difference of two readings of the same clock, not of two clocks.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>

namespace hangscan {

// `se.exec_start` (milliseconds of the run-queue clock) from the text of a sched file.
std::optional<double> parse_exec_start_ms(std::string_view sched_text);

// `nr_switches` (the times the thread left a CPU, voluntarily or not) from the text of a sched
// file. Why from there: the file is read for the blocked time anyway, and for a thread off the
// CPU it equals the times it was put on one (/proc/TID/schedstat's third figure), which a
// second file per thread would cost.
std::optional<std::uint64_t> parse_nr_switches(std::string_view sched_text);

class RunQueueClock {
 public:
  // Seconds since a thread that last ran on `cpu` stopped running, given its `se.exec_start`
  // (ms) and the CLOCK_MONOTONIC reading `now_ms` taken when the file was read. nullopt when
  // no CPU of this machine could be measured (then no figure is better than a wrong one).
  std::optional<double> seconds_since(double exec_start_ms, int cpu, double now_ms);

  // Offset (CLOCK_MONOTONIC minus run-queue clock, ms) of `cpu`; measured on first use. A CPU
  // this process may not run on (cpuset) borrows the offset of one it can. Safe from several
  // threads: the live targets of a run share one clock (the offsets are the node's).
  std::optional<double> offset_ms(int cpu);

  // CLOCK_MONOTONIC in milliseconds.
  static double monotonic_ms();

 private:
  std::mutex mu_;  // guards offsets_
  std::map<int, std::optional<double>> offsets_;
  std::optional<double> any_offset();  // with mu_ held
};

// What the sched file of a thread that is not running says: since when it is off the CPU and
// how often it left one.
struct ThreadSched {
  std::optional<double> blocked_s;
  std::optional<std::uint64_t> switches;
};

// ThreadSched of thread `tid` of `pid` in state `state` (read just before): both nullopt when it
// is running ('R') or its sched file cannot be read.
ThreadSched read_thread_sched(RunQueueClock& clock, int pid, int tid, char state, int cpu);

}  // namespace hangscan
