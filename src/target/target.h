// Target: one process to capture, live or from a core.
//
// Why: live and core are one pipeline. After a Target is opened, unwinding, Python walking,
// grouping and reporting never know which kind they got. A Target gives the module map, a
// MemoryReader, process/thread metadata, and a Freeze: for a live process every thread
// stopped (ptrace) until released; for a core a no-op, since a core is already frozen.
#pragma once

#include <sys/user.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hangscan/model.h"
#include "hangscan/result.h"
#include "proc/mapping.h"
#include "target/memory_reader.h"
#include "target/module_source.h"
#include "util/deadline.h"

namespace hangscan {

// x86-64 general registers as the kernel reports them (PTRACE_GETREGS, NT_PRSTATUS).
struct Registers {
  user_regs_struct raw{};
  std::uint64_t pc() const { return raw.rip; }
  std::uint64_t sp() const { return raw.rsp; }
  std::uint64_t fs_base() const { return raw.fs_base; }
};

// The top of one thread's stack, copied while the thread was stopped.
struct StackCopy {
  std::uint64_t start = 0;  // address of bytes[0] (the stack pointer, rounded down)
  std::vector<std::uint8_t> bytes;
  // True when the thread ran on after the copy (a sample of a running process): the memory
  // around it has changed since, so an unwind reads nothing outside `bytes` (it ends where
  // the copy does, with its reason) instead of today's stack under an old frame.
  bool sealed = false;
  // Written without `addr + len`, which wraps for addresses near 2^64 (corrupt frames).
  bool contains(std::uint64_t addr, std::size_t len) const {
    return addr >= start && len <= bytes.size() && addr - start <= bytes.size() - len;
  }
};

// What the freeze captured for one thread.
struct FrozenThread {
  int tid = 0;
  std::optional<Registers> regs;  // nullopt: registers could not be read (see error)
  std::string error;
  bool uninterruptible = false;  // in D state: not stopped, its user stack is out of reach
};

// RAII guard over a stopped target. The destructor resumes whatever is still stopped, so an
// exception or early return can never leave a thread stopped.
class Freeze {
 public:
  virtual ~Freeze() = default;
  virtual const std::vector<FrozenThread>& threads() const = 0;
  // Resumes every thread; returns the pause (first stop to last resume) in microseconds.
  virtual std::int64_t release() = 0;
  // How much of the pause went to stopping every thread and reading registers (microseconds):
  // --verbose splits the pause so a slow one can be pinned on its phase.
  virtual std::int64_t stopped_us() const { return 0; }
  // Empty while the process lives; else how it ended while frozen ("was killed by SIGKILL").
  // Why: memory read after a death is missing, not wrong, so a capture or a core taken
  // across one looks complete unless the caller asks; call it before release().
  virtual std::string death() { return {}; }
  // True when the process executed a new program (exec) while frozen: the kernel killed its
  // other threads, and what was copied belongs to the old program. Call it before release();
  // death() is empty then (the process lives on).
  virtual bool executed() { return false; }
};

// A Target is the ModuleSource its copies are finished against (capture/finish.h).
class Target : public ModuleSource {
 public:
  // "pid 1234" or "core core-python-1234": used in messages.
  virtual std::string describe() const = 0;

  // Thread ids known before a freeze (live: /proc/PID/task; cores: the NT_PRSTATUS notes).
  // Capture describes these threads before stopping them, so states and wchans are the
  // ones the program was in, not ptrace-stop. An empty list means: describe after the freeze.
  virtual std::vector<int> thread_ids() { return {}; }

  // Stops the target (live) and reads every thread's registers. Bounded by `deadline`.
  virtual Result<std::unique_ptr<Freeze>> freeze(const Deadline& deadline) = 0;
  // The same, leaving the threads `leave_alone` untouched (not attached, not stopped): the
  // quiet path (capture/quiet_source.h) took them without a stop. Cores ignore the list.
  virtual Result<std::unique_ptr<Freeze>> freeze_except(const Deadline& deadline,
                                                        const std::vector<int>& leave_alone) {
    (void)leave_alone;
    return freeze(deadline);
  }

  // Fills process-level metadata: cmdline, exe, ppid, state, host, core info.
  virtual void describe_process(ProcessSnapshot& out) = 0;
  // Fills thread-level metadata: name, state, wchan, syscall, kernel stack, cpu ticks.
  virtual void describe_thread(ThreadSnapshot& out) = 0;

  // The environment the process started with (live: /proc/PID/environ; core: the initial
  // stack). Empty when unreadable. The environment as the process sees it now (libc's
  // `environ` in memory) is read_environment() in discovery/environ_memory.h, which callers
  // prefer.
  virtual std::vector<std::string> environment() = 0;
};

}  // namespace hangscan
