// Recorder: the eBPF programs of bpf/ loaded, attached and drained.
//
// Why a class: it owns every kernel object the recorder creates (programs, maps, links, the
// per-CPU perf events) through file descriptors only; nothing is pinned, so when hangscan
// ends in any way, SIGKILL included, the kernel frees them all with its last fd. The
// destructor frees them earlier. Built without eBPF, start() says so with a hint.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hangscan/result.h"
#include "watch/records.h"

namespace hangscan {

struct RecorderOptions {
  int sample_hz = 19;                            // on-CPU samples per second per CPU
  std::uint64_t wait_threshold_ns = 10'000'000;  // a system call this long is an event
  bool follow_children = false;                  // processes the watched ones fork join
  // The longest waits kept per process: the kernel sends only waits among them (0: all).
  std::uint32_t top_waits = 5;
  // Whether progress is tracked (only the watchdog needs it): the socket tracepoints that count
  // sends and receives, and the watcher's reads of /proc/PID/io. Without --stall neither is
  // done, and the job's socket calls pay nothing.
  bool data_progress = true;
  // Where the kernel can (Linux 6.18's BPF task work), a thread whose wait is sent copies its own
  // user stack on its way back to user space; false: the iterator's passes copy long sleeps'
  // stacks every 100 ms instead, as on older kernels (HANGSCAN_WAIT_COPIES=iterator).
  bool copy_at_resume = true;
};

class Recorder {
 public:
  // Opens, loads and attaches the programs. Errors say which step failed, with the fix.
  static Result<std::unique_ptr<Recorder>> start(const RecorderOptions& options);
  virtual ~Recorder() = default;

  // Adds or removes a process (tgid): every thread of it is recorded.
  virtual Status watch(int pid) = 0;
  virtual void unwatch(int pid) = 0;
  // Process `pid` is Python, its interpreter at `where`: samples copy its Python frames too.
  // Returns why not when the recorder cannot walk this interpreter.
  virtual Status watch_python(int pid, const python::Located& where) {
    (void)pid;
    (void)where;
    return Error(Errc::unsupported, "this recorder takes no Python frames in its samples");
  }
  // The processes the kernel side records now (with those it added on fork).
  virtual std::map<int, ProcessCounters> watched() = 0;
  // Appends the records so far to `out` (copies only) after up to `timeout`; it may return
  // sooner, at the latest when an exit, a signal or an OOM kill was recorded.
  virtual Status poll(Recording& out, std::chrono::milliseconds timeout) = 0;
  // Appends everything recorded so far, including what the kernel still buffers: the eBPF
  // recorder wakes its reader in batches, so a window's last ~100 ms would otherwise be missing
  // from its report. Call once, at the end of a window.
  virtual void drain_now(Recording& out) { (void)out; }
  virtual RecorderCounters counters() = 0;
  // System calls of watched threads still in progress and at least `min_ns` old at `now_ns`
  // (CLOCK_MONOTONIC): the waits the window ends in. No user stack (the thread is not running).
  virtual std::vector<WaitRecord> ongoing(std::int64_t now_ns, std::uint64_t min_ns) = 0;
  // Whether OOM victims are recorded (oom:mark_victim passes the task on this kernel).
  virtual bool records_oom() const = 0;
  // Whether a wait's waker is known: the programs tell a task's wake-up from an interrupt's
  // (no task woke the thread) only where the kernel's BTF locates the preempt count.
  virtual bool records_wakers() const = 0;
  // How waits that end get their user stacks: "resume" (the thread copies its own on its way back
  // to user space, with its Python frames), "iterator" (passes copy long sleeps every 100 ms),
  // "" (none: the ptrace fallback records no waits).
  virtual std::string wait_copies() const { return ""; }
};

// True when this binary carries the eBPF recorder.
bool recorder_built_in();

}  // namespace hangscan
