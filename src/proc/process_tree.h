// The processes of this machine as a tree, for choosing what to capture.
//
// Why: an operator names a launcher (`--pid P --subprocesses`) or a pattern (`--match REGEX`)
// and expects every rank under it, not one pid. /proc is read once into a snapshot so that
// parent/child questions are answered consistently even while processes exit mid-scan: a
// process that vanishes between the directory listing and reading its files is skipped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hangscan/result.h"
#include "util/pattern.h"

namespace hangscan {

// One process as /proc/PID/stat showed it when the tree was scanned.
struct ProcessEntry {
  int pid = 0;
  int ppid = 0;
  std::string comm;
  char state = '?';
  bool kernel_thread = false;
  std::uint64_t start_time = 0;  // clock ticks since boot: tells a reused pid apart
};

class ProcessTree {
 public:
  // Reads every /proc/PID/stat (or `proc_root`/PID/stat for fixture trees in tests).
  static ProcessTree scan(const std::string& proc_root = "/proc");
  explicit ProcessTree(std::vector<ProcessEntry> entries);

  const std::vector<ProcessEntry>& entries() const { return entries_; }
  const ProcessEntry* find(int pid) const;
  // Direct children, sorted by pid.
  std::vector<int> children(int pid) const;
  // All descendants (not `pid` itself), parents before children, siblings by pid.
  std::vector<int> descendants(int pid) const;
  // Parent, grandparent, ... up to the root, nearest first; stops at a cycle.
  std::vector<int> ancestors(int pid) const;
  bool is_ancestor(int ancestor, int pid) const;

 private:
  std::vector<ProcessEntry> entries_;  // sorted by pid
};

// argv of a process from /proc/PID/cmdline; empty for kernel threads, zombies and vanished
// processes.
std::vector<std::string> process_cmdline(int pid, const std::string& proc_root = "/proc");
// /proc/PID/environ: the environment the process started with; empty when unreadable.
std::vector<std::string> process_environ_file(int pid, const std::string& proc_root = "/proc");

// The command line joined with single spaces, as `pgrep -f` matches it.
std::string joined_cmdline(const std::vector<std::string>& argv);

// --match sees the first this many characters of a command line. Why: std::regex matches by
// recursion, one level per character; a target's command line of 16 KiB (any user can make
// one of 2 MiB) made `dump --match 'x+z'` overflow root's stack (SIGSEGV).
inline constexpr std::size_t kMaxMatchedCmdline = 4096;

// The --match pattern (POSIX extended); Errc::usage with a hint when it is invalid, empty (it
// would match every process) or longer than kMaxPatternLength. Why exposed: front ends (pdsh)
// check it before sending it to every node.
Result<Pattern> compile_match_pattern(const std::string& regex);

// Pids whose joined command line (its first kMaxMatchedCmdline characters) matches `regex`
// (POSIX extended, searched anywhere), like `pgrep -f`. Processes in `exclude` (hangscan
// itself and its ancestors, whose command lines contain the pattern) and kernel threads are
// skipped. Errc::usage for an invalid regex.
Result<std::vector<int>> match_processes(const ProcessTree& tree, const std::string& regex,
                                         const std::vector<int>& exclude,
                                         const std::string& proc_root = "/proc");

}  // namespace hangscan
