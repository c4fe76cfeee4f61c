// Telling an exec from a death or a refusal, for a live process, from /proc alone.
//
// Why: when any thread of a process calls execve, the kernel kills every other thread (SIGKILL)
// and, for a moment, leaves the thread group leader a zombie. To a tracer this looks like a
// process killed while stopped (its tracees exit by SIGKILL), a zombie, or a refusal (PTRACE_SEIZE
// of the leader fails with EPERM). What was copied then belongs to the old program: the capture
// says the process executed a new program, and to run hangscan again, instead of calling it dead,
// a zombie or a permission problem.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "hangscan/result.h"

namespace hangscan {

// What an exec changes: the start of the stack moves (address space layout randomization),
// while the start time stays (the exec'ing thread inherits the leader's).
struct ExecMark {
  std::uint64_t start_time = 0;
  std::uint64_t start_stack = 0;  // 0: unknown (an exiting leader, or hidden from us)
};

std::optional<ExecMark> exec_mark(int pid);

// True while a thread of `pid` is inside execve or execveat.
bool exec_in_progress(int pid);

// True when `pid` (the same process: same start time) is executing a new program now, or has
// executed one since `mark` was taken. False when it is gone, exiting, or unchanged.
bool executed_since(int pid, const ExecMark& mark);

// When the leader of `pid` is a zombie because one of its threads is executing a new program,
// waits (at most `wait`) for the exec to complete. True when it completed (the process runs the
// new program), false when there was no exec under way or it did not complete in time.
bool wait_out_exec(int pid, std::chrono::milliseconds wait);

// "pid N executed a new program during the capture" with the hint to run hangscan again.
Error exec_error(int pid);

}  // namespace hangscan
