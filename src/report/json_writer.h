// JSON writer for the `hangscan/1` document (docs/output-schema.md is the contract).
//
// Why: JSON is what scripts, dashboards and the multi-node front end consume; one writer,
// shared with the agent wire format, keeps every field spelled once. Unknown values are null,
// addresses are "0x.." strings (JSON numbers lose 64-bit precision in many readers).
#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "group/analysis.h"
#include "hangscan/model.h"

namespace hangscan {

inline constexpr const char* kSchemaName = "hangscan/1";

// Why: the agent format replaces every stack array by an index into a table of distinct
// stacks; the writer asks this interface instead of knowing about the table.
class StackInterner {
 public:
  virtual ~StackInterner() = default;
  virtual std::size_t intern(const std::vector<Frame>& stack) = 0;
};

// A value, or null when there is none (every optional field of hangscan/1 is written so).
template <class T>
nlohmann::json json_or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json frame_to_json(const Frame& f);
nlohmann::json frames_to_json(const std::vector<Frame>& frames);
nlohmann::json diagnostic_to_json(const Diagnostic& d);
// With `stacks`, the thread's frames / native_frames / kernel_frames are stack indexes.
nlohmann::json thread_to_json(const ThreadSnapshot& t, StackInterner* stacks = nullptr);
nlohmann::json process_to_json(const ProcessSnapshot& p, StackInterner* stacks = nullptr);
// The whole document; groups/suspects/... are null when `analysis` is null. With `stacks`, every
// thread's and group's stack is an index (the HTML page's interned data).
nlohmann::json job_to_json(const JobSnapshot& job, const Analysis* analysis,
                           StackInterner* stacks = nullptr);

// indent < 0: one line (the agent and --json-compact); otherwise pretty-printed.
std::string write_json(const JobSnapshot& job, const Analysis* analysis, int indent = 2);
void write_json(std::ostream& out, const JobSnapshot& job, const Analysis* analysis,
                int indent = 2);

// "0x1a2b".
std::string hex_string(std::uint64_t v);

}  // namespace hangscan
