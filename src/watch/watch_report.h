// WatchReport: what `hangscan watch` saw over a window, per process, plus the timeline.
//
// Why plain values: the text and JSON writers, the watchdog's bundle and the tests read the
// same structure; the recorder's raw records never leave src/watch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "group/analysis.h"
#include "hangscan/model.h"
#include "watch/process_facts.h"
#include "watch/records.h"

namespace hangscan {

struct StackShare {
  std::vector<Frame> frames;  // native frames, innermost first
  bool incomplete = false;    // the unwinding stopped before the entry point (outer frames missing)
  std::size_t samples = 0;
  double share = 0;  // of the process's samples
};

struct WaitView {
  int tid = 0;
  std::string comm;
  long syscall_nr = -1;         // -1: unknown, or off CPU outside a system call
  std::string syscall;          // its name; empty: off CPU outside a system call
  std::optional<long long> fd;  // the first argument of calls that take an fd
  double duration_s = 0;
  double offcpu_s = 0;   // the same as duration_s: a wait is one sleep (docs/watch.md "Waits")
  double end_s = 0;      // seconds from the window's start
  bool ongoing = false;  // still waiting when the window ended
  bool before_window = false;  // blocked since before the window (start, syscall and kernel stack
                               // from /proc; user frames when the recorder copied the sleep)
  int waker_pid = 0;           // 0: no task woke it (a timeout, an interrupt), or not known
  bool waker_known = true;     // false: this kernel does not say (Recorder::records_wakers)
  int waker_tid = 0;
  std::string waker_comm;
  std::vector<std::string> kernel;  // kernel functions, innermost first
  std::vector<Frame> frames;        // user frames at the wait, innermost first
  bool incomplete = false;          // as StackShare::incomplete
};

// What one process did over the window (watch_groups.h), as data: its words are made by the
// writers (behaviour_words(), watch/watch_words.h).
enum class BehaviourKind {
  active,     // it ran and woke in the window
  stuck,      // in one wait of half the window or more, still going at the end
  pool_wait,  // a pool member stuck in the program's own code (Behaviour::user_frame)
  ended,      // it ended within the window (Behaviour::exit)
};

struct Behaviour {
  BehaviourKind kind = BehaviourKind::active;
  std::vector<std::string> key;  // grouping key: function names, innermost first
  // stuck, pool_wait: the wait's system call (empty: off CPU outside one), its length so far
  // and whether it began before the window.
  std::string syscall;
  double wait_s = 0;
  bool before_window = false;
  std::optional<Frame> user_frame;  // pool_wait: the program's frame at the wait
  double cpu_share = 0;             // active: CPUs used on average (ProcessWatch::cpu_share)
  std::uint64_t wait_count = 0;     // active: waits ended in the window
  ProcessExit exit;                 // ended: how (ProcessWatch::exit)
  // Not written out: what a pool's roles read (group/roles.h) on this node.
  std::vector<Frame> frames;  // the stuck wait's user frames, innermost first
  char state = '?';           // 'S' stuck, 'R' active, 'X' ended
};

// An event of the window, as data: its words are made by the writers (timeline_sentence(),
// watch/watch_format.h).
struct TimelineEntry {
  double t_s = 0;  // seconds from the window's start
  EventRecord event;
  std::optional<int> rank;  // of event.pid
};

struct ProcessWatch {
  int pid = 0;
  int ppid = 0;  // when discovered
  std::optional<int> rank;
  std::string role;
  std::string comm;
  std::size_t samples = 0;
  double cpu_share = 0;               // CPUs used on average: samples / (rate * window)
  std::vector<double> cpu_over_time;  // the same per bucket of WatchReport::cpu_bucket_s
  std::vector<StackShare> top;
  std::vector<WaitView> waits;      // longest first
  std::uint64_t wait_count = 0;     // waits completed in the window (the kernel counts them all)
  std::optional<ProcessExit> exit;  // how it ended, when it did within the window
  std::vector<WatchNote> notes;     // what went wrong capturing it
  Behaviour behaviour;              // set with the report's verdict (watch_groups.h)
};

// Processes that did the same over the window.
struct WatchGroup {
  std::vector<int> ranks;  // sorted; members without a rank are in pids only
  std::vector<int> pids;
  std::vector<std::string> hosts;  // the nodes, in a merged report
  Behaviour behaviour;             // the first member's (its key, frames and state not kept)
  bool suspect = false;
};

// What a verdict was found on: the members as a job (one thread each, its behaviour key as
// frames) and group/analysis.h's analysis of it. Why kept: the findings are data that point into
// this job; the writers make their words (watch/watch_words.h).
struct VerdictBasis {
  JobSnapshot job;
  Analysis analysis;
};

// The groups and the odd ones named (group/analysis.h's verdict on the behaviours).
struct WatchVerdict {
  std::vector<WatchGroup> groups;  // smallest first
  std::vector<int> suspects;       // ranks
  // The findings (basis->analysis.findings, note_findings, wait_findings); null when nothing
  // was grouped. Shared: the findings point into basis->job.
  std::shared_ptr<const VerdictBasis> basis;
};

struct WatchReport {
  std::string recorder;  // "ebpf" or "ptrace"
  double window_s = 0;
  std::int64_t start_ns = 0;  // CLOCK_MONOTONIC of the window's start (the timeline's zero)
  double cpu_bucket_s = 0;    // the buckets of ProcessWatch::cpu_over_time (cpu_timeline.h)
  int sample_hz = 0;
  std::uint64_t wait_threshold_ns = 0;
  bool wakers_known = true;  // whether the waits' wakers are recorded (Recorder::records_wakers)
  std::string wait_copies;   // how waits get user stacks (Recorder::wait_copies)
  std::vector<ProcessWatch> processes;  // ranks by rank, then the rest by pid
  std::vector<TimelineEntry> timeline;
  WatchVerdict verdict;
  RecorderCounters counters;
  std::vector<Diagnostic> diagnostics;
};

}  // namespace hangscan
