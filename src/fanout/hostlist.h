// Host lists and name validation for the multi-node modes.
//
// Why: operators name nodes the way Slurm and pdsh print them (`node-[21,23-26]`,
// `n[1-3],gpu7`, `n[01-10]`) or hand over a hostfile (one host per line, DeepSpeed's
// `host slots=N`). Every name ends up in an argv given to srun or pdsh and, for
// `--remote-setup`, in a remote shell line, so names are validated here, once, before any use:
// only letters, digits, '.', '-' and '_', bounded length, never starting with '-'.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hangscan/result.h"

namespace hangscan {

inline constexpr std::size_t kMaxHostNameLength = 253;  // DNS name limit
inline constexpr std::size_t kMaxHosts = 1u << 20;      // guards `n[0-999999999]`
inline constexpr std::size_t kMaxJobIdLength = 64;

// A host name safe to pass as an argument and to quote into a shell line.
Status validate_host_name(std::string_view name);

// A Slurm job id: digits, optionally an array task (`123_4`) or a het component (`123+1`).
Status validate_job_id(std::string_view id);

// Expands a Slurm/pdsh host list into unique names in first-appearance order. Items are
// separated by ',' (outside brackets) or whitespace; an item may hold several bracket groups
// (`r[1-2]n[1-2]` is their product). Zero padding follows the lower bound (`n[01-10]`).
// Errc::usage with the offending item for bad syntax, reversed ranges, invalid names, or
// more than max_hosts names.
Result<std::vector<std::string>> parse_hostlist(std::string_view text,
                                                std::size_t max_hosts = kMaxHosts);

// The inverse, for short srun/pdsh arguments: hosts sharing a prefix and a numeric suffix of
// the same width become one bracket group (`n[1-3,5],gpu7`). Groups keep the order in which
// their prefix first appears; parse_hostlist(compress_hostlist(v)) has the same set as v.
std::string compress_hostlist(const std::vector<std::string>& hosts);

struct HostEntry {
  std::string name;
  std::optional<int> slots;  // DeepSpeed / Open MPI `slots=N`
};

// A hostfile: one host (or host-list expression) per line, '#' starts a comment, blank lines
// are skipped, `key=value` words after the host are accepted and `slots=N` is kept.
// Duplicate hosts keep their first line. Errors name the line number.
Result<std::vector<HostEntry>> parse_hostfile(std::string_view text,
                                              std::size_t max_hosts = kMaxHosts);

}  // namespace hangscan
