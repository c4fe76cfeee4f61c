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

// The new program is named by its comm (the kernel sets it from the file name at the exec),
// so a retry can be aimed; the name is the target's: the edge escapes it.
Error exec_error(int pid) {
  // The name is set late in the exec: give one under way a moment (callers have released it).
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  while (exec_in_progress(pid) && std::chrono::steady_clock::now() < until) {
    timespec nap{0, 200'000};
    nanosleep(&nap, nullptr);
  }
  std::string comm = read_comm(pid, pid);
  std::string now = comm.empty() ? std::string() : fmt::format(", now {}", comm);
  return Error(Errc::io,
               fmt::format("pid {} executed a new program during the capture (exec){}: what was "
                           "being copied belonged to the old one",
                           pid, now),
               0, hints::run_again_after_exec());
}

}  // namespace hangscan
