// The /proc facts a core writer (corewrite/) and `hangscan doctor` need beyond proc_files.h:
// smaps flags, coredump_filter, resource limits, session ids, signal masks, RSS.
//
// Why here: they are /proc parsers like the others in src/proc (the core writer held them);
// each takes text so it is unit-tested on fixtures; the readers treat an unreadable file as
// "unknown" (nullopt / empty), never as fatal.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hangscan {

// What /proc/PID/smaps (and a look at the first bytes) says about one mapping.
struct MappingFacts {
  bool known = false;       // smaps was readable for this mapping
  bool dontdump = false;    // VmFlags "dd": madvise(MADV_DONTDUMP)
  bool io = false;          // VmFlags "io" or "pf": device memory, never read it
  bool hugetlb = false;     // VmFlags "ht"
  bool anon_pages = false;  // "Anonymous:" > 0: a private file mapping that was written
  bool elf_magic = false;   // the mapping starts with "\x7fELF" (file offset 0)
};

// /proc/PID/smaps: facts per mapping start address.
std::map<std::uint64_t, MappingFacts> parse_smaps(std::string_view text);

// /proc/PID/coredump_filter ("00000033\n"), hex.
std::optional<std::uint32_t> parse_coredump_filter(std::string_view text);

// "Max core file size" soft limit of /proc/PID/limits in bytes; UINT64_MAX for unlimited.
std::optional<std::uint64_t> parse_core_limit(std::string_view limits_text);

// The fields of /proc/PID/stat (or task/TID/stat) a core's notes carry.
struct StatFacts {
  char state = '?';
  int ppid = 0;
  int pgrp = 0;
  int sid = 0;
  int nice = 0;
  std::uint64_t utime_ticks = 0;
  std::uint64_t stime_ticks = 0;
};
std::optional<StatFacts> parse_stat_facts(std::string_view text);

// A "Key:\tvalue" field of /proc/PID/status (first word of the value).
std::optional<std::string> status_field(std::string_view status_text, std::string_view key);

// A hex field of a status file ("SigBlk"), 0 when absent.
std::uint64_t status_hex(std::string_view status_text, std::string_view key);

}  // namespace hangscan
