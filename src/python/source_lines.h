// Source lines of a target's Python files, for showing the running expression.
//
// Why: 3.11+ code objects say which columns of a line run (PEP 657), and the report shows that
// part of the line marked, as CPython's own tracebacks do. The file is the target's view: a
// live process's files through /proc/PID/root (another mount namespace) and /proc/PID/cwd
// (relative names), a core's through the same sysroot mapping as its libraries.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "target/module_source.h"

namespace hangscan::python {

inline constexpr std::size_t kMaxSourceFile = 8 << 20;    // bytes of one file
inline constexpr std::size_t kMaxSourceTotal = 64 << 20;  // bytes kept per run
inline constexpr std::size_t kMaxSourceLine = 400;        // characters of a shown line

class SourceLines {
 public:
  explicit SourceLines(ModuleSource& source) : source_(source) {}

  // Line `line` (1-based) of `file` without its newline; nullopt when unreadable.
  std::optional<std::string> line(const std::string& file, int line);

 private:
  const std::vector<std::string>* load(const std::string& file);

  ModuleSource& source_;
  std::map<std::string, std::optional<std::vector<std::string>>> files_;
  std::size_t total_ = 0;
};

}  // namespace hangscan::python
