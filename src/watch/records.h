// Plain records of what the recorder saw, decoded from the ring buffer's bytes.
//
// Why: the ring-buffer callback must only store (unwinding there livelocked, see
// ../shared/field-notes.md §3); these structs are what it stores. They hold no kernel layout,
// so the unwinding, the report and the watchdog read records, not BPF structs, and the
// ptrace fallback produces the same records.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "python/python_reader.h"
#include "target/target.h"

struct hs_user_stack;  // bpf/watch_events.h (a C struct, in no namespace)

namespace hangscan {

// Registers and the top of the user stack of one thread at one moment, plus its kernel stack.
struct SampledStack {
  Registers regs;
  StackCopy stack;
  std::vector<std::uint64_t> kernel;  // kernel return addresses, innermost first
  // A sample of a Python process: its thread's Python frames at the same instant (raw
  // pointers, named when the stack is finished); nullopt: not a Python process, or a thread
  // without a Python thread state.
  std::optional<python::RawPythonThread> python;
};

struct SampleRecord {
  int pid = 0;
  int tid = 0;
  std::int64_t ts_ns = 0;  // CLOCK_MONOTONIC
  std::string comm;
  bool in_kernel = false;
  int syscall_nr = -1;  // the system call the thread was in, -1 if none
  SampledStack copy;
};

// One long sleep of a thread: in a system call (syscall_nr >= 0) or outside one (a page fault).
struct WaitRecord {
  int pid = 0;
  int tid = 0;
  std::int64_t end_ns = 0;  // when the thread ran again (or the window ended)
  std::string comm;
  long syscall_nr = -1;
  std::uint64_t arg0 = 0;
  std::uint64_t seq = 0;  // which sleep of the thread
  std::uint64_t duration_ns = 0;
  int waker_pid = 0;  // 0: no task woke it (a timeout, an interrupt)
  int waker_tid = 0;
  std::string waker_comm;
  bool has_user_stack = false;
  bool ongoing = false;  // still waiting when the window ended
  // Asleep since before the recording began (its start, syscall and waker are unknown to the
  // recorder: /proc has them); only its user stack, copied while it slept.
  bool before_window = false;
  // Its user stack comes in a WaitCopyRecord of the same thread (the recorder joins the two).
  bool copy_follows = false;
  SampledStack copy;
};

// The user stack of a thread's waits first_seq..last_seq, copied by the thread itself right
// after they ended, before it ran any user code (joined with the waits by the recorder).
struct WaitCopyRecord {
  int pid = 0;
  int tid = 0;
  std::uint64_t first_seq = 0;
  std::uint64_t last_seq = 0;
  bool stale = false;  // its registers were not those it slept with: no copy
  SampledStack copy;
};

// Exits, signals and OOM victims: the timeline.
struct EventRecord {
  enum class Kind { exit, signal, oom, exec };
  Kind kind = Kind::exit;
  std::int64_t ts_ns = 0;
  int pid = 0;  // the watched process concerned
  int tid = 0;
  std::string comm;
  int exit_code = 0;  // exit: task->exit_code (status << 8, or the signal | 0x80 core); -1: unknown
  int signal = 0;     // signal
  int sender_pid = 0;  // 0: generated in an interrupt (a timer's signal): no task sent it
  int sender_tid = 0;
  std::string sender_comm;
  int si_code = 0;
  int result = 0;    // TRACE_SIGNAL_*: 0 delivered, 1 ignored, 2 already pending
  std::string path;  // exec: the program, as exec was given it
};

struct RecorderCounters {
  std::uint64_t events = 0;        // records sent
  std::uint64_t lost = 0;          // records the ring buffer had no room for
  std::uint64_t stack_faults = 0;  // user stacks that could not be read at all
  std::uint64_t stopped_ns = 0;    // ptrace fallback: time the processes were held stopped
};

// Per-process counters kept in the kernel (progress, without an event each).
struct ProcessCounters {
  std::uint64_t samples = 0;
  std::uint64_t io_jiffies = 0;      // when a data call last moved bytes (grows with each new one)
  std::uint64_t waits = 0;           // waits of at least the threshold
  std::uint64_t waits_not_sent = 0;  // of those, shorter than every kept one (counted only)
};

struct Recording {
  std::vector<SampleRecord> samples;
  std::vector<WaitRecord> waits;
  std::vector<EventRecord> events;
  std::vector<WaitCopyRecord> wait_copies;  // joined with their waits by the recorder
};

// The registers and stack bytes of the recorder's struct hs_user_stack (kernel stack included).
SampledStack sampled_stack_of(const ::hs_user_stack& u);

// Decodes one ring-buffer record and appends it to `out`. Returns false for a record too short
// or of an unknown kind (it is dropped). Copies only: this runs in the ring-buffer callback.
bool decode_record(std::span<const std::uint8_t> data, Recording& out);

}  // namespace hangscan
