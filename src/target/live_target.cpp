#include "target/live_target.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "proc/container_info.h"
#include "proc/memory_usage.h"
#include "proc/proc_files.h"
#include "target/exec_watch.h"
#include "target/ptrace_stopper.h"
#include "util/hints.h"
#include "util/parse_number.h"

namespace hangscan {

namespace {

double wall_clock_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const long whole_us = ts.tv_nsec / 1000;  // microseconds, as every wall-clock field is
  return static_cast<double>(ts.tv_sec) + static_cast<double>(whole_us) / 1e6;
}

// How long an exec that made the leader a zombie may take to complete before the pid is opened.
constexpr auto kExecWait = std::chrono::milliseconds(200);

Error own_pid_error(int pid) {
  return Error(Errc::usage, fmt::format("pid {} is hangscan itself", pid), 0, hints::own_pid());
}

std::string hostname() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

std::shared_ptr<SeizeReaper> LiveRunShared::reaper() {
  std::lock_guard lock(mu_);
  if (!reaper_) reaper_ = std::make_shared<SeizeReaper>();
  return reaper_;
}

Result<std::unique_ptr<Target>> open_live_target(int pid, bool read_only,
                                                 std::shared_ptr<LiveRunShared> shared) {
  if (pid <= 0) return Error(Errc::usage, fmt::format("{} is not a valid pid", pid));
  if (pid == getpid()) return own_pid_error(pid);
  auto stat = read_stat(pid);
  // An exec makes the leader a zombie for a moment: that one is not dead, it runs a new program.
  if (stat && (stat->state == 'Z' || stat->state == 'X') &&
      wait_out_exec(pid, ExecMark{stat->start_time, 0, false}, kExecWait)) {
    const Deadline done = Deadline::after(kExecWait);  // until the exec'ing thread leads
    while (stat && (stat->state == 'Z' || stat->state == 'X') && !done.expired()) {
      timespec nap{0, 500'000};
      nanosleep(&nap, nullptr);
      stat = read_stat(pid);
    }
    if (stat && (stat->state == 'Z' || stat->state == 'X'))
      return exec_error(pid, ExecMark{stat->start_time, 0, false});
  }
  if (!stat) {
    return Error(Errc::no_such_process, fmt::format("pid {}: no such process", pid), ESRCH,
                 hints::check_pid());
  }
  if (stat->is_kernel_thread()) {
    return Error(Errc::kernel_thread,
                 fmt::format("pid {} ({}) is a kernel thread", pid, stat->comm), 0,
                 "kernel threads have no user-space stack; its kernel stack is in /proc/PID/stack");
  }
  if (stat->state == 'Z' || stat->state == 'X') {
    return Error(
        Errc::zombie, fmt::format("pid {} ({}) is a zombie: it has exited", pid, stat->comm), 0,
        fmt::format("its parent (pid {}) has not reaped it; there is nothing left to capture",
                    stat->ppid));
  }
  auto status = read_status(pid);
  if (status && status->tgid == getpid()) return own_pid_error(pid);  // one of our threads
  if (!read_only && status && status->tracer_pid != 0 && status->tracer_pid != getpid()) {
    std::string tracer = read_comm(status->tracer_pid, status->tracer_pid);
    return Error(
        Errc::already_traced,
        fmt::format("pid {} is already traced by pid {} ({})", pid, status->tracer_pid,
                    tracer.empty() ? "?" : tracer),
        EPERM,
        "detach the other tracer (strace, gdb, py-spy) and try again, or use --nonblocking "
        "(Python frames read without ptrace)");
  }
  const ExecMark before{stat->start_time, stat->start_stack, true};
  auto maps_text = read_text_file(fmt::format("/proc/{}/maps", pid));
  if (!maps_text) {
    if (exec_in_progress(pid)) return exec_error(pid, before);
    if (process_exiting(pid)) return exiting_error(pid);
    if (maps_text.error().code == Errc::permission) {
      return ptrace_permission_error(pid, "", EACCES, read_ptrace_standing());
    }
    // The same process (start time) lives on: its map vanished with the old leader of an exec.
    if (wait_out_exec(pid, before, kExecWait)) return exec_error(pid, before);
    return Error(Errc::no_such_process, fmt::format("pid {}: no such process", pid), ESRCH);
  }
  if (!shared) shared = std::make_shared<LiveRunShared>();
  auto target = std::make_unique<LiveTarget>(pid, std::move(shared));
  auto st = target->refresh_mappings();
  if (!st) return std::move(st).error();
  if (target->mappings().empty()) {
    if (exec_in_progress(pid)) return exec_error(pid, before);
    // An exec that ended between the read and the check above (its old leader's map is empty,
    // and the process looks as if exiting, while the exec runs): the map is there now. A
    // refused map, or that of a process that is really exiting, stays empty.
    if (target->refresh_mappings() && !target->mappings().empty()) return exec_error(pid, before);
    if (process_exiting(pid)) return exiting_error(pid);
    return ptrace_permission_error(pid, " (its memory map is empty to us)", EACCES,
                                   read_ptrace_standing());
  }
  return std::unique_ptr<Target>(std::move(target));
}

LiveTarget::LiveTarget(int pid, std::shared_ptr<LiveRunShared> shared)
    : pid_(pid), memory_(pid), shared_(std::move(shared)) {}

std::string LiveTarget::describe() const { return fmt::format("pid {}", pid_); }

Status LiveTarget::refresh_mappings() {
  auto text = read_text_file(fmt::format("/proc/{}/maps", pid_));
  if (!text) return std::move(text).error();
  mappings_ = parse_maps(*text);
  return Ok{};
}

std::optional<std::string> LiveTarget::local_path(const Mapping& m) const {
  if (!m.is_file()) return std::nullopt;
  if (m.deleted) {
    // The file was replaced on disk (an upgrade while running): the original is still
    // reachable through map_files.
    return fmt::format("/proc/{}/map_files/{:x}-{:x}", pid_, m.start, m.end);
  }
  // /proc/PID/root keeps paths right for processes in another mount namespace (containers).
  std::string rooted = fmt::format("/proc/{}/root{}", pid_, m.path);
  struct stat st {};
  if (m.inode != 0 && ::stat(rooted.c_str(), &st) == 0 && st.st_ino == m.inode) return rooted;
  // Another file at that name now (the target can rename and link its own files): the mapped
  // file itself, where map_files is open to us (root), so no path the target swaps is opened.
  std::string mapped = fmt::format("/proc/{}/map_files/{:x}-{:x}", pid_, m.start, m.end);
  if (::access(mapped.c_str(), R_OK) == 0) return mapped;
  if (access(rooted.c_str(), R_OK) == 0) return rooted;
  return m.path;
}

namespace {

// A relative name as a name in the process's root: its working directory joined with it, when
// the process shares hangscan's root (readlink of /proc/PID/cwd then names it in both views).
std::optional<std::string> in_root(int pid, const std::string& relative) {
  struct stat ours {
  }, theirs{};
  if (::stat("/", &ours) != 0 || ::stat(fmt::format("/proc/{}/root", pid).c_str(), &theirs) != 0 ||
      ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino)
    return std::nullopt;
  auto cwd = read_link(fmt::format("/proc/{}/cwd", pid));
  if (!cwd || (*cwd)[0] != '/' || cwd->ends_with(" (deleted)")) return std::nullopt;
  return *cwd + "/" + relative;
}

}  // namespace

Result<TargetFile> LiveTarget::read_target_file(const std::string& name, std::size_t max_bytes) {
  if (name.empty()) return Error(Errc::not_found, "no such file");
  TargetFileRequest r;
  r.name = name;
  if (name[0] != '/') {
    // Relative to its working directory; where that has no name in its root (another root),
    // resolved beneath the directory itself.
    auto joined = in_root(pid_, name);
    r.beneath = !joined;
    if (joined) r.name = std::move(*joined);
  }
  r.root = fmt::format("/proc/{}/{}", pid_, r.beneath ? "cwd" : "root");
  r.as = read_file_credentials(pid_);
  if (!r.as) return Error(Errc::no_such_process, "the process's credentials are unknown");
  r.max_bytes = max_bytes;
  return shared_->files().read(r);
}

std::optional<std::int64_t> LiveTarget::started_unix_ns() const {
  return process_start_unix_ns(pid_);
}

std::vector<int> LiveTarget::thread_ids() {
  auto tids = list_tasks(pid_);
  if (!tids) return {};
  return *tids;
}

Result<std::unique_ptr<Freeze>> LiveTarget::freeze(const Deadline& deadline) {
  return freeze_except(deadline, {});
}

Result<std::unique_ptr<Freeze>> LiveTarget::freeze_except(const Deadline& deadline,
                                                          const std::vector<int>& leave_alone) {
  auto stopper = PtraceStopper::stop_all(pid_, deadline, leave_alone, shared_->reaper());
  if (!stopper) return std::move(stopper).error();
  return std::unique_ptr<Freeze>(std::move(*stopper));
}

void LiveTarget::describe_process(ProcessSnapshot& out) {
  out.pid = pid_;
  if (out.host.empty()) out.host = hostname();
  if (auto st = read_stat(pid_)) {
    out.ppid = st->ppid;
    out.state = st->state;
    out.start_ticks = st->start_time;
  }
  out.captured_at = wall_clock_seconds();
  out.memory = read_memory_usage(pid_);
  if (auto cmd = read_text_file(fmt::format("/proc/{}/cmdline", pid_), 1 << 16)) {
    out.cmdline = split_nul(*cmd);
    while (!out.cmdline.empty() && out.cmdline.back().empty()) out.cmdline.pop_back();
  }
  if (auto exe = read_link(fmt::format("/proc/{}/exe", pid_))) out.exe = std::move(*exe);
}

void LiveTarget::describe_thread(ThreadSnapshot& out) {
  out.is_main = out.tid == pid_;
  if (auto st = read_stat(pid_, out.tid)) {
    out.state = st->state;
    out.cpu_ticks = st->utime + st->stime;
    if (out.name.empty()) out.name = st->comm;
    auto sched = read_thread_sched(shared_->clock(), pid_, out.tid, st->state, st->processor);
    out.blocked_s = sched.blocked_s;
    out.timeslices = sched.switches;
  }
  out.wchan = read_wchan(pid_, out.tid);
  if (auto text = read_text_file(fmt::format("/proc/{}/task/{}/syscall", pid_, out.tid))) {
    out.syscall = parse_syscall(*text);
    out.stack_pointer = parse_syscall_sp(*text);
    out.syscall_args = parse_syscall_args(*text);
  }
  if (auto text = read_text_file(fmt::format("/proc/{}/task/{}/stack", pid_, out.tid))) {
    out.kernel_frames = parse_kernel_stack(*text);
  }
}

std::vector<std::string> LiveTarget::environment() {
  auto text = read_text_file(fmt::format("/proc/{}/environ", pid_), 1 << 20);
  if (!text) return {};
  auto vars = split_nul(*text);
  while (!vars.empty() && vars.back().empty()) vars.pop_back();
  return vars;
}

}  // namespace hangscan
