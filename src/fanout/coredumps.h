// Where systemd-coredump put a dead rank's core: `coredumpctl --json=short list PID`.
//
// Why: on nodes where kernel.core_pattern pipes cores to systemd-coredump, the core is not a
// file next to the process but an entry of coredumpctl (stored under /var/lib/systemd/coredump,
// compressed, or in the journal, or not at all when too large). The death sentence must say
// which, and how to get a file `hangscan core` reads. The JSON is coredumpctl's list table
// (columns time, pid, uid, gid, sig, corefile, exe, size; time in microseconds since the epoch,
// sig a number or a name, size null when unknown); parsers take text and are unit-tested on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hangscan/model.h"
#include "util/deadline.h"

namespace hangscan {

struct CoredumpEntry {
  std::optional<double> time_s;  // Unix seconds
  int pid = 0;
  std::optional<int> signal;
  std::string corefile;  // "present", "missing", "journal", "none", "truncated", "inaccessible"
  std::string exe;
  std::optional<std::uint64_t> size;
};

// The argv that lists `pid`'s cores as JSON.
std::vector<std::string> coredumpctl_argv(int pid);

// coredumpctl's JSON list; malformed input or entries are skipped (never throws).
std::vector<CoredumpEntry> parse_coredumpctl_list(std::string_view json_text);

// The newest entry of `pid` at or after `since_s` (the process's start); nullopt when none.
std::optional<CoredumpEntry> coredump_of(const std::vector<CoredumpEntry>& entries, int pid,
                                         double since_s);

// What a death's `core` says for an entry: "systemd-coredump (present, 12.3 MiB); write it out
// with: coredumpctl dump 4725 -o core.4725, then: hangscan core core.4725".
std::string coredump_words(const CoredumpEntry& e);

// For every death of `job` whose core went to systemd-coredump (name_cores said so), asks
// coredumpctl (within `deadline`) and says where the core is; unchanged when coredumpctl is
// absent or knows nothing of it.
void locate_coredumps(JobSnapshot& job, const Deadline& deadline);

}  // namespace hangscan
