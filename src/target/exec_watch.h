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
// A leader seen dead (a zombie) that lives again later ran an exec meanwhile.
struct ExecMark {
  std::uint64_t start_time = 0;
  std::uint64_t start_stack = 0;  // 0: unknown (an exiting leader, or hidden from us)
  bool leader_alive = true;
};

std::optional<ExecMark> exec_mark(int pid);

// True while a thread of `pid` is inside execve or execveat.
bool exec_in_progress(int pid);

// True when `pid` (the same process: same start time) is executing a new program now, or has
// executed one since `mark` was taken. False when it is gone, exiting, or unchanged.
bool executed_since(int pid, const ExecMark& mark);

// executed_since(), asked again for at most `wait`: an exec under way brings a dead leader back
// as the exec'ing thread, and /proc shows a running exec only in passing (its system call reads
// "running", its new stack start comes late). For the error paths: after a refusal (EPERM) or a
// zombie leader; false once the process is gone, or after `wait` when nothing changed.
bool wait_out_exec(int pid, const ExecMark& mark, std::chrono::milliseconds wait);

// "pid N executed a new program during the capture" with the hint to run hangscan again; with
// ", now COMM" when the exec is seen complete since `before` (a mark taken before the capture).
Error exec_error(int pid, const std::optional<ExecMark>& before = std::nullopt);

}  // namespace hangscan
