// SnapshotFields: the model pieces of a hangscan JSON document, read with every bound.
//
// Why: the streaming reader (json_reader.cpp) sees a document's parts in the order they were
// written, and the agent format writes each process before the stack table its threads refer
// to. This class converts what the reader hands it (one process, the tables as they came) with
// the checks and the error wording of one place, and keeps a thread's stack references until
// the tables are known.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hangscan/model.h"
#include "report/bounded_json.h"
#include "report/json_reader.h"
#include "util/shared_stacks.h"

namespace hangscan {

// A table of an agent document as it streamed in: its entries (up to the limit), how many
// there were, and the value itself when it was not an array.
template <class T>
struct RawTable {
  bool present = false;
  std::vector<T> items;
  std::size_t count = 0;
  std::optional<nlohmann::json> not_array;  // includes null
};

// One entry of the "frames" or "stacks" table: where its first values (scalars; nested values
// as they were) stand in the table's flat `values`, how many values it had, and the entry
// itself when it was not an array.
struct RawEntry {
  std::size_t first = 0;
  std::size_t stored = 0;
  std::size_t count = 0;
  std::optional<nlohmann::json> not_array;
};

// The "frames" or "stacks" table: every entry's values in one flat array (no allocation per
// entry).
struct RawEntries : RawTable<RawEntry> {
  std::vector<nlohmann::json> values;
};

// The string table: non-string entries are kept aside (by position) for the error message.
struct RawStrings {
  RawTable<std::string> table;
  std::optional<std::pair<std::size_t, nlohmann::json>> first_bad;
};

class SnapshotFields : public BoundedFields {
 public:
  using json = nlohmann::json;
  // Whether stack fields are table indexes (agent) or inline arrays: unknown until the
  // "schema" member is read, which a sorted document writes after "processes".
  enum class Mode { unknown, agent, plain };

  explicit SnapshotFields(const ReadLimits& limits)
      : BoundedFields(limits.max_string, limits.max_list), lim_(limits) {}

  void set_mode(Mode m) { mode_ = m; }
  // The process at `index` of "processes" (its stack references kept for resolve_stacks()).
  ProcessSnapshot process(const json& v, std::size_t index);
  // job_id and expected_world_size.
  void top_level(const json& doc, JobSnapshot& out);
  // Checks the agent tables, in their order (every entry, used or not).
  void check_tables(const RawStrings& strings, const RawEntries& frames, const RawEntries& stacks);
  // Resolves every kept stack reference of `out`'s threads through the checked tables,
  // interning frames and stacks in `shared`. Plain documents: a kept reference is an error.
  // `frames` is the table check_tables() checked.
  void resolve_stacks(JobSnapshot& out, const RawEntries& frames, SharedStacks& shared);
  // unreachable, diagnostics and deaths.
  void rest(const json& doc, JobSnapshot& out) const;
  // Forgets the references kept so far (a repeated "processes" member replaces the first).
  void forget_references();

 private:
  struct StackRef {
    std::size_t process;
    std::size_t thread;
    int field;  // 0 frames, 1 native_frames, 2 kernel_frames
    json value;
  };

  void check_table_shape(bool present, const std::optional<json>& not_array, std::size_t count,
                         const JsonPath& path) const;
  std::vector<std::string_view> strings_table(const RawStrings& raw, const JsonPath& root) const;
  FrameView compact_frame(const RawEntry& raw, const nlohmann::json* values,
                          const JsonPath& path) const;
  std::vector<std::uint32_t> stack_entry(const RawEntry& raw, const nlohmann::json* values,
                                         std::size_t frames, const JsonPath& path) const;

  Death death(const json& v, const JsonPath& path) const;
  std::vector<WaitEdge> waits_on(const json& obj, const JsonPath& path) const;
  std::optional<MemoryUsage> memory(const json& obj, const JsonPath& path) const;
  Frame frame(const json& v, const JsonPath& path) const;
  std::vector<Frame> frame_list(const json& arr, const JsonPath& path);
  void count_frames(std::size_t n, const JsonPath& path);
  FrameStack stack(const json& obj, int field, const JsonPath& path, std::size_t thread);
  std::vector<Diagnostic> diagnostics(const json& obj, const JsonPath& path) const;
  ThreadSnapshot thread(const json& v, const JsonPath& path, std::size_t index);
  void process_extras(const json& o, const JsonPath& path, ProcessSnapshot& p);

  const ReadLimits& lim_;
  Mode mode_ = Mode::unknown;
  std::size_t total_frames_ = 0;
  std::size_t process_ = 0;  // index of the process being read
  std::vector<StackRef> refs_;
  std::optional<std::string> inline_stack_;  // first inline stack seen while the mode was unknown
  std::vector<std::string_view> table_strings_;  // the agent tables, checked
  std::size_t frame_count_ = 0;
  std::vector<std::vector<std::uint32_t>> entries_;
};

}  // namespace hangscan
