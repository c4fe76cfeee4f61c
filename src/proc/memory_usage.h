// A process's memory next to its stacks: RSS, peak RSS and the memory cgroup that bounds it.
//
// Why: the most common silent death of a rank is the OOM killer. A rank whose RSS is close to
// its cgroup's limit is about to die; after it died, the limit explains the death. Both are read
// from /proc and the cgroup file system of this node, cgroup v1 and v2 alike (clusters run
// either, and this machine mounts both).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hangscan/model.h"

namespace hangscan {

// VmRSS and VmHWM (kB in the file) of /proc/PID/status, in bytes.
struct StatusMemory {
  std::optional<std::uint64_t> rss_bytes;
  std::optional<std::uint64_t> peak_rss_bytes;
};
StatusMemory parse_status_memory(std::string_view status_text);

// One line of /proc/PID/cgroup: "ID:controllers:/path" (v2: "0::/path").
struct CgroupEntry {
  std::vector<std::string> controllers;  // empty for v2
  std::string path;
};
std::vector<CgroupEntry> parse_proc_cgroup(std::string_view text);

// Where a cgroup hierarchy is mounted (from /proc/self/mountinfo): v2 ("cgroup2") and the v1
// hierarchy that carries the memory controller.
struct CgroupMounts {
  std::string v2;         // empty when not mounted
  std::string v1_memory;  // empty when not mounted
};
CgroupMounts parse_cgroup_mounts(std::string_view mountinfo_text);

// A limit file's value: "max" (v2) or a v1 "unlimited" value (>= 2^62) is no limit (nullopt).
std::optional<std::uint64_t> parse_memory_limit(std::string_view text);

// Reads the memory of live process `pid` of this node. The cgroup shown is the one whose limit
// binds (the tightest limit from the process's cgroup up to the hierarchy's root); without any
// limit, the process's own cgroup and its usage.
std::optional<MemoryUsage> read_memory_usage(int pid);

// The "oom_kill N" line of v2 memory.events or v1 memory.oom_control; nullopt when absent.
std::optional<std::uint64_t> parse_oom_kill_count(std::string_view text);

// OOM kills the memory cgroup of `pid` recorded (a zombie still names its cgroup); nullopt
// when it counts none or cannot be read. Only the process's own cgroup: a parent's v2 counter
// also counts its other children's kills (other jobs). Why: the kernel log is root-only on most
// nodes and a ring buffer forgets; the cgroup's counter outlives both (while the cgroup exists).
struct CgroupOomKills {
  std::string cgroup;  // path relative to the hierarchy's root
  std::string file;    // "memory.events" or "memory.oom_control"
  std::uint64_t count = 0;
};
std::optional<CgroupOomKills> read_cgroup_oom_kills(int pid);

}  // namespace hangscan
