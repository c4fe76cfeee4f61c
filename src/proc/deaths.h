// How the dead died: a zombie's exit status and the kernel log's OOM kills and crashes.
//
// Why: the most common "hang" of a big job is a dead rank; the others wait for it in a
// collective until a timeout hours later. Where everyone is does not say what happened; the
// node still knows: an unreaped child keeps its wait status in /proc/PID/stat, and the kernel
// log records every OOM kill (with the memory cgroup, its limit and the victim's RSS) and every
// segfault. Parsers take text, so they are tested on recorded lines; `explain_deaths` is the
// one place that reads this node's files and fills a JobSnapshot's deaths.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hangscan/model.h"

namespace hangscan {

// One /dev/kmsg record: seconds since boot (the kernel log's clock) and the message.
struct KernelRecord {
  double boot_s = 0;
  std::string text;
};
std::vector<KernelRecord> parse_kmsg(std::string_view text);

// A death the kernel log tells of: an OOM kill ("oom-kill", with cgroup, limit and RSS when
// the report has them), a segfault or another trap ("segfault").
struct KernelDeath {
  int pid = 0;
  std::string comm;
  double boot_s = 0;
  Death death;
};
std::vector<KernelDeath> kernel_deaths(const std::vector<KernelRecord>& records);

// A wait status (/proc/PID/stat field 52 of a zombie) as a death: killed by a signal (core
// dumped or not) or exited with a code.
Death death_from_wait_status(int status);

// Field 52 (exit_code) of /proc/PID/stat; nullopt when absent or malformed.
std::optional<int> parse_stat_exit_code(std::string_view stat_text);

// Where a core of process `comm`/`pid` went by kernel.core_pattern: "piped to systemd-coredump
// (coredumpctl info PID)", or the file path (relative to the process's working directory when
// the pattern is relative); empty when no core can be named.
std::string core_destination(std::string_view core_pattern, int pid, const std::string& comm);

// Fills `death` of this node's zombies and dead processes of `job` (host `host`), and adds to
// job.deaths the kernel log's deaths since the job's oldest process started whose command
// name is that of one of its processes and that no process of the report is. Reads
// /proc/PID/stat, /dev/kmsg (root; else nothing from the log) and kernel.core_pattern.
void explain_deaths(JobSnapshot& job, const std::string& host);

}  // namespace hangscan
