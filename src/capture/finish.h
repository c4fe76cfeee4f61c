// finish_process(): copies of a process's threads -> a ProcessSnapshot (frames, notes, Python).
//
// Why: a capture has two halves with different needs. The first (acquire.h) needs the process
// itself and must be short: it stops the threads, copies registers, stack tops and the Python
// frame chains' raw pointers, and lets them go. This half needs only those copies and a
// ModuleSource (the mappings, the file behind each, memory outside the copies): it unwinds the
// copies (libdw or libunwind), symbolizes, decodes Python, merges (--native), trims frames past
// a thread's entry point and flags incomplete stacks. Because it takes plain values and no
// Target, every source of copies goes through the same code: a live freeze, a core, the eBPF
// recorder's samples (registers from bpf_task_pt_regs, up to 16 KiB of stack from the stack
// pointer, the pid's live maps), and unit tests with fabricated copies.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capture/capture.h"
#include "hangscan/model.h"
#include "target/module_source.h"
#include "target/target.h"
#include "unwind/symbol_cache.h"

namespace hangscan {

// One thread as it was copied.
struct ThreadCopy {
  int tid = 0;
  // x86-64 user registers (user_regs_struct). nullopt: not read (see `error`), or a copy
  // without registers (--nonblocking). A sample of pt_regs converts field by field; fs_base
  // may stay 0 (Python threads are then matched by native thread id or stack range only).
  std::optional<Registers> regs;
  // The top of the stack, from the stack pointer up (empty: not copied). Reads the unwinder
  // makes outside it go to ModuleSource::memory().
  StackCopy stack;
  std::string error;             // why the registers are missing: a note on the thread
  bool uninterruptible = false;  // in D state, so not stopped: its user stack is missing
  // The thread's description (state, wchan, syscall, kernel stack...), taken before the stop
  // when the source could. `described.tid` may be 0: the snapshot then has just `tid`.
  ThreadSnapshot described;
};

// How long the process was stopped, and on what (for --verbose).
struct PauseTimes {
  std::int64_t pause_us = 0;     // first stop to last resume
  std::int64_t stopped_us = 0;   // stopping every thread and reading registers
  std::int64_t stacks_us = 0;    // copying the stacks
  std::int64_t python_us = 0;    // walking the Python frame chains
  std::size_t stack_bytes = 0;   // bytes of stacks copied
  std::size_t python_reads = 0;  // reads of the target's memory the Python walk made
};

// The Python half of a copy: where the interpreter is, the frame chains as raw pointers, and
// the pages they were read from (capture/python_capture.h builds and decodes it).
struct PythonCopy;

// Everything one capture copied out of a process, as plain values.
struct ProcessCopy {
  int pid = 0;
  std::string what;         // "pid 1234" / "core core.1234": for messages
  ProcessSnapshot process;  // process-level description (threads empty)
  // The threads the snapshot will have, in this order for equal tids: several samples of one
  // thread may share a tid (a Python frame chain is matched to a tid, so only to one of them).
  std::vector<ThreadCopy> threads;
  // True when `threads` carry registers and stacks to unwind (a freeze, a core, a sample);
  // false when they are descriptions only (--nonblocking, or a freeze that failed).
  bool registers_copied = true;
  std::optional<PauseTimes> pause;      // nullopt: nothing was stopped
  std::string death;                    // how the process ended while stopped; empty: it lives
  std::vector<Diagnostic> diagnostics;  // problems of the acquisition (a failed freeze)
  // Null when there was no Python walk. Shared, so a copied ProcessCopy shares it.
  std::shared_ptr<PythonCopy> python;
};

class DwflSession;
class Unwinder;

// The unwinder and symbolizer of one address space. Why a caller may keep one (`keep` below):
// the recorder finishes copies of the same process every few seconds, and opening them (the
// module list, CFI, symbol tables) costs 10-20 ms a process, unwinding a copy ~0.1 ms. Made on
// the first call that needs it; valid while the ModuleSource it was made with lives and has the
// same mappings (drop it when they change).
struct NativeUnwinding {
  NativeUnwinding();
  ~NativeUnwinding();
  NativeUnwinding(NativeUnwinding&&) noexcept;
  NativeUnwinding& operator=(NativeUnwinding&&) noexcept;
  std::unique_ptr<DwflSession> session;
  std::unique_ptr<Unwinder> unwinder;
};

// Turns the copies into a snapshot, after the target runs again (or without any target).
// Reads `options.unwinder`, `native`, `merge_native`, `log`. `source` must describe the process
// the copies came from. Never throws: a failure is an error diagnostic of the snapshot. With
// `keep`, its unwinder is used (made first if empty) and kept for the next call.
ProcessSnapshot finish_process(ProcessCopy copy, ModuleSource& source,
                               const CaptureOptions& options, SymbolCache& symbols,
                               NativeUnwinding* keep = nullptr);

}  // namespace hangscan
