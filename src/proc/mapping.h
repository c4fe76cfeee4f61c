// Mapping: one line of /proc/PID/maps or one NT_FILE entry of a core.
//
// Why here: the /proc parsers (proc_files.h) produce it and every Target (target/target.h)
// serves it; it lives at the lower of the two so that proc never includes target.
#pragma once

#include <cstdint>
#include <string>

namespace hangscan {

struct Mapping {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::uint64_t offset = 0;  // file offset of `start`
  std::string perms;         // "r-xp"
  std::string path;          // "" anonymous, "[stack]", "/usr/lib/..."
  std::uint64_t inode = 0;
  bool deleted = false;  // "(deleted)" suffix stripped from path
  bool readable() const { return !perms.empty() && perms[0] == 'r'; }
  bool writable() const { return perms.size() > 1 && perms[1] == 'w'; }
  bool executable() const { return perms.size() > 2 && perms[2] == 'x'; }
  bool is_file() const { return !path.empty() && path[0] == '/'; }
  bool contains(std::uint64_t a) const { return a >= start && a < end; }
};

}  // namespace hangscan
