#include "target/exec_watch.h"

#include <sys/syscall.h>
#include <time.h>

#include <fmt/format.h>

#include "proc/proc_files.h"
#include "util/hints.h"
#include "util/parse_number.h"

namespace hangscan {

namespace {

// The system call number a blocked thread shows in /proc/PID/task/TID/syscall, if any.
std::optional<long> syscall_number(int pid, int tid) {
  auto text = read_text_file(fmt::format("/proc/{}/task/{}/syscall", pid, tid), 512);
  if (!text) return std::nullopt;
  auto space = text->find(' ');
  if (space == std::string::npos) return std::nullopt;  // "running"
  auto nr = parse_int<long>(std::string_view(*text).substr(0, space));
  if (!nr) return std::nullopt;
  return *nr;
}

void nanosleep_ms_fraction() {
  timespec nap{0, 200'000};  // 0.2 ms
  nanosleep(&nap, nullptr);
}

bool alive(const ProcStat& st) {
  constexpr unsigned long kPfExiting = 0x4;
  return st.state != 'Z' && st.state != 'X' && (st.flags & kPfExiting) == 0;
}

}  // namespace

std::optional<ExecMark> exec_mark(int pid) {
  auto st = read_stat(pid);
  if (!st) return std::nullopt;
  return ExecMark{st->start_time, alive(*st) ? st->start_stack : 0, alive(*st)};
}

bool exec_in_progress(int pid) {
  auto tids = list_tasks(pid);
  if (!tids) return false;
  for (int tid : *tids) {
    auto nr = syscall_number(pid, tid);
    if (nr && (*nr == SYS_execve || *nr == SYS_execveat)) return true;
  }
  return false;
}

// In this order: an exec that completes between the two looks is seen by its moved stack.
bool executed_since(int pid, const ExecMark& mark) {
  if (exec_in_progress(pid)) {
    auto st = read_stat(pid);
    return st && st->start_time == mark.start_time;
  }
  auto st = read_stat(pid);
  if (!st || st->start_time != mark.start_time || !alive(*st)) return false;
  if (!mark.leader_alive) return true;
  return mark.start_stack != 0 && st->start_stack != 0 && st->start_stack != mark.start_stack;
}

bool wait_out_exec(int pid, const ExecMark& mark, std::chrono::milliseconds wait) {
  const auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (executed_since(pid, mark)) return true;
    auto st = read_stat(pid);
    if (!st || st->start_time != mark.start_time) return false;
    if (std::chrono::steady_clock::now() >= until) return false;
    timespec nap{0, 500'000};  // 0.5 ms
    nanosleep(&nap, nullptr);
  }
}

// The new program is named by its comm, so a retry can be aimed; the name is the target's (the
// edge escapes it). Only once the exec is seen complete: the kernel sets the name early in the
// exec and the new stack start (stat's start_stack) late, so a start_stack other than `before`'s
// (or any, after a mark of a leader dead in an exec) means the name is the new one. An exec still
// under way (held by a tracer) is not named.
Error exec_error(int pid, const std::optional<ExecMark>& before) {
  std::string now;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  // A mark of a dead leader (mid-exec) has no stack start: any later one is the new program's.
  while (before && (before->start_stack != 0 || !before->leader_alive) && now.empty()) {
    auto st = read_stat(pid);
    if (!st || st->start_time != before->start_time) break;
    if (st->start_stack != 0 && st->start_stack != before->start_stack && alive(*st) &&
        !exec_in_progress(pid))
      now = fmt::format(", now {}", read_comm(pid, pid));
    else if (std::chrono::steady_clock::now() >= until) break;
    else nanosleep_ms_fraction();
  }
  return Error(Errc::io,
               fmt::format("pid {} executed a new program during the capture (exec){}: what was "
                           "being copied belonged to the old one",
                           pid, now),
               0, hints::run_again_after_exec());
}

}  // namespace hangscan
