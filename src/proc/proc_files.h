// Parsers for the /proc files hangscan reads about a live process and its threads.
//
// Why separate from reading: each parser takes the file's text, so unit tests run them on
// fixture files, and a malformed or truncated file is a parse failure, not a crash. The
// readers are thin and treat an unreadable file as "unknown", never as fatal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hangscan/model.h"
#include "hangscan/result.h"
#include "proc/mapping.h"

namespace hangscan {

// Splits a /proc line on runs of spaces and tabs.
std::vector<std::string_view> split_fields(std::string_view s);

// Calls f(line) for each line of a /proc file (without the '\n').
template <class F>
void for_each_line(std::string_view text, F&& f) {
  while (!text.empty()) {
    auto nl = text.find('\n');
    f(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

// Reads a whole (pseudo-)file, at most `max_bytes`.
Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes = 1 << 22);

// The target of a symbolic link (/proc/PID/exe, cwd, fd/N; /proc/self/exe), or nothing when it
// cannot be read or is longer than PATH_MAX. Why here: one buffer size and one truncation rule
// for every caller, instead of a char[PATH_MAX] and a readlink() at each.
std::optional<std::string> read_link(const std::string& path);
// The same, relative to an open directory: the node-wide fd scan reads `name` in /proc/PID/fd
// without walking the path from /proc again for every fd.
std::optional<std::string> read_link_at(int dir_fd, const char* name);

// /proc/PID/maps
std::vector<Mapping> parse_maps(std::string_view text);

// /proc/PID/stat and /proc/PID/task/TID/stat (the comm field may contain spaces and ')').
struct ProcStat {
  int pid = 0;
  std::string comm;
  char state = '?';
  int ppid = 0;
  unsigned long flags = 0;
  std::uint64_t utime = 0;
  std::uint64_t stime = 0;
  std::uint64_t start_time = 0;
  long num_threads = 0;
  int processor = -1;             // CPU the task last ran on (field 39); -1 unknown
  std::uint64_t start_stack = 0;  // field 28; moves with every exec under ASLR, 0 when hidden
  bool is_kernel_thread() const { return (flags & 0x00200000UL) != 0; }  // PF_KTHREAD
};
std::optional<ProcStat> parse_stat(std::string_view text);

// /proc/PID/status: the fields hangscan needs.
struct ProcStatus {
  std::string name;
  char state = '?';
  int tgid = 0;
  int ppid = 0;
  int tracer_pid = 0;
  int uid = -1;  // real uid
  int euid = -1;
};
std::optional<ProcStatus> parse_status(std::string_view text);

// /proc/TID/syscall: "202 0x... sp pc" -> "futex"; "running"; "-1 sp pc" -> "none".
std::optional<std::string> parse_syscall(std::string_view text);
std::string syscall_name(long number);
// The user stack pointer in /proc/TID/syscall (second to last field); nullopt for "running".
std::optional<std::uint64_t> parse_syscall_sp(std::string_view text);
// The six argument registers in /proc/TID/syscall ("NR a0 .. a5 sp pc"); empty when the thread
// runs or is in no system call. Why: which fd (or poll set) a blocked thread waits on.
std::vector<std::uint64_t> parse_syscall_args(std::string_view text);

// /proc/TID/stack: "[<0>] futex_wait_queue+0x60/0xa0" lines -> kernel frames.
std::vector<Frame> parse_kernel_stack(std::string_view text);

// NUL-separated files (/proc/PID/cmdline, /proc/PID/environ).
std::vector<std::string> split_nul(std::string_view text);

// Thread ids in /proc/PID/task, sorted. Errc::no_such_process when the process is gone.
Result<std::vector<int>> list_tasks(int pid);

// The process ids in `proc_root`: its entries named by a positive number ("self", "-1" and
// "0" never), sorted; empty when it cannot be read. Why one walk: the node-wide fd scans, the
// process tree, the socket waits and `watch --end-window` all list the processes of /proc.
std::vector<int> list_pids(const std::string& proc_root = "/proc");

// /proc/PID/io's rchar + wchar: bytes the process's read and write calls moved through the VFS
// (read, write, their vector and positional forms, sendfile, copy_file_range), all its threads,
// the dead ones included. Why: a rank's data-call progress for the watchdog, with no hook.
std::optional<std::uint64_t> parse_io_chars(std::string_view text);
std::optional<std::uint64_t> read_io_chars(int pid);

// Convenience readers; nullopt / empty when unreadable.
std::optional<ProcStat> read_stat(int pid, int tid = 0);
std::optional<ProcStatus> read_status(int pid);
std::optional<std::string> read_wchan(int pid, int tid);
std::string read_comm(int pid, int tid);

// True when the process is on its way out: gone, a zombie, or its main thread has PF_EXITING
// set. Why: the kernel refuses ptrace (EPERM) and empties /proc/PID/maps for such a process,
// which would otherwise read as "permission denied".
bool process_exiting(int pid);
// "pid N: the process is exiting" (Errc::no_such_process), for the callers that found so.
Error exiting_error(int pid, int err = 0);

}  // namespace hangscan
