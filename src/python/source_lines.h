// Source lines of a target's Python files, for showing the running expression.
//
// Why: 3.11+ code objects say which columns of a line run (PEP 657), and the report shows that
// part of the line marked, as CPython's own tracebacks do. The file name comes from the
// target's memory, so the file is read as the target itself could read it
// (ModuleSource::read_target_file: its root, its credentials, a regular file, bounded), and a
// file changed since the process started is not shown as its running code. Each file whose
// text is withheld is named once, with the reason, for the report.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "target/module_source.h"

namespace hangscan::python {

inline constexpr std::size_t kMaxSourceFile = 8 << 20;    // bytes of one file
inline constexpr std::size_t kMaxSourceTotal = 64 << 20;  // bytes kept per run
inline constexpr std::size_t kMaxSourceLine = 400;        // characters of a shown line
// A file whose mtime or ctime is later than the process start by more than this changed after
// the start (the start is known to a clock tick, file times to the kernel's coarse clock).
inline constexpr std::int64_t kSourceChangeSlackNs = 20'000'000;

// A file whose text is not shown, and why ("the process's user (uid 65534) may not read it").
struct WithheldSource {
  enum class Why { refused, changed, slow };  // slow: a read timed out (a stuck file system)
  std::string file;
  std::string reason;
  Why why = Why::refused;
};

class SourceLines {
 public:
  explicit SourceLines(ModuleSource& source) : source_(source) {}

  // Line `line` (1-based) of `file` without its newline; nullopt when unreadable or withheld.
  std::optional<std::string> line(const std::string& file, int line);

  // The files withheld since the last call, each once per SourceLines.
  std::vector<WithheldSource> take_withheld();

 private:
  const std::vector<std::string>* load(const std::string& file);

  ModuleSource& source_;
  std::map<std::string, std::optional<std::vector<std::string>>> files_;
  std::vector<WithheldSource> withheld_;
  std::size_t total_ = 0;
  bool stuck_ = false;  // a read timed out: the file system is stuck, read no more files
};

}  // namespace hangscan::python
