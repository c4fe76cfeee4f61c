// The lines hangscan recognises in a job's logs: one table, each entry naming its producer's
// source file, and the prefixes launchers put in front of a line.
//
// Why one table: adding a producer (a new PyTorch message, another launcher) is one entry, with
// its citation beside it (docs/logs.md says how); every line goes through the same cheap
// keyword test before any regular expression runs, which is what keeps gigabytes of logs fast.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "logs/log_events.h"
#include "util/pattern.h"

namespace hangscan {

struct LinePattern {
  LogKind kind;
  std::string_view keyword;  // a substring every matching line holds (tested first)
  Pattern pattern;           // searched in the line once the keyword is there
  // Copies the groups of a match into the event.
  void (*fill)(const std::vector<std::string>& groups, LogEvent& event);
  std::string_view source;  // the producer's file this format comes from
};

// The table (built once; read-only afterwards).
const std::vector<LinePattern>& log_patterns();

// What a line says before its message: a launcher's rank label (torchrun's "[rank3]:" or
// "[default3]:", srun --label's "3: "), a date, PyTorch's "[PG ID 0 ... Rank 5]".
struct LinePrefix {
  std::optional<int> rank;
  std::optional<int> pg;
  std::optional<double> time;  // seconds since the epoch, read as UTC
  std::string_view rest;       // the line after the launcher's label
};
// with_time false: the date is not read (time stays nullopt); the reader's hot path needs it
// only for the lines that become events.
LinePrefix parse_line_prefix(std::string_view line, bool with_time = true);

// A date and time at the start of `text` ("2026-11-27 12:03:04,123", "...T12:03:04.5",
// torchrun's "2026-11-27_12:03:04"), as seconds since the epoch read as UTC.
std::optional<double> parse_log_time(std::string_view text);

// Host names as lines give them (NCCL's short name, torchrun's summary the full one): the same
// host when their first labels are equal.
bool same_host(std::string_view a, std::string_view b);

// The event a single line is, with the line's prefixes applied; nullopt for any other line.
std::optional<LogEvent> classify_log_line(std::string_view line);

}  // namespace hangscan
