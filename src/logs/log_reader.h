// Reading a job's logs: files, directories and globs, plain or gzip'd, streamed with bounded
// memory, every line through the pattern table (log_patterns.h), multi-line reports (Python
// tracebacks, torchrun's failure summary) followed per rank label.
//
// Why streamed and bounded: logs of a large job are gigabytes in thousands of files, and any
// of them may be truncated, binary or hostile. Each file's trouble is that file's `error`;
// nothing in a line is ever opened, run or trusted as a path.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "logs/log_events.h"

namespace hangscan {

struct LogReadOptions {
  std::size_t max_line = 64u << 10;   // longer lines are cut (counted per file)
  std::size_t max_events = 200'000;   // past this, events are counted, not kept
  std::size_t max_files = 100'000;    // files found under directories and globs
  std::size_t max_labels = 1u << 16;  // rank labels per file whose last line is kept
};

// A log already read into memory by the caller (the Slurm job's own output, read with the job's
// user's rights): read like a file named `name`, after the files. `error` non-empty: it could
// not be read, and says why (reported as that file's error).
struct LogText {
  std::string name;
  std::string text;
  std::optional<double> modified;  // when it was last written, seconds since the epoch
  std::string error;
  std::optional<int> rank;  // whose log it is, when the caller knows (a pod of one rank)
};

// Reads every regular file named by `paths` (a file, a directory walked recursively without
// following links, or a glob pattern), in the order given (directory entries sorted), then
// `texts`.
LogSet read_logs(const std::vector<std::string>& paths, const LogReadOptions& options = {},
                 const std::vector<LogText>& texts = {});

// The rank a log file's name gives: Slurm's "%x-%j-%t.out" (the last number before the
// extension), "rank3", "rank_3", torchrun's "--log-dir" layout ".../attempt_0/3/stderr.log".
std::optional<int> rank_from_file_name(std::string_view path);

}  // namespace hangscan
