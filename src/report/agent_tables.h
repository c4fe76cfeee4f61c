// AgentTables: the "strings", "frames" and "stacks" tables of one agent document, read from a
// JsonCursor, and the threads' stack references resolved through them.
//
// Why: a node's agent sends each distinct frame and stack once and its threads name stacks by
// index; a sorted document writes the tables after the processes. The fast reader keeps each
// table as flat raw values (string views into the document, frame slots as numbers), checks
// them all at the end exactly as SnapshotFields does, and builds only the stacks a thread
// uses, interned run-wide in SharedStacks. Anything it would have to word as an error makes it
// decline (AgentTables::Decline), and the reference reader reads the document instead.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <forward_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hangscan/model.h"
#include "report/json_cursor.h"
#include "report/json_reader.h"
#include "util/shared_stacks.h"

namespace hangscan {

// Thrown by the fast agent reader when the document is one it leaves to the reference reader
// (anything malformed, out of bounds, or a part it does not read itself).
struct Decline {};

[[noreturn]] inline void decline() { throw Decline{}; }

// Where a thread's stack reference goes once the tables are known.
struct StackRef {
  std::uint32_t process;
  std::uint32_t thread;
  std::uint32_t field;  // 0 frames, 1 native_frames, 2 kernel_frames
  std::uint32_t stack;
};

class AgentTables {
 public:
  explicit AgentTables(const ReadLimits& limits) : lim_(limits) {}

  // The value of the top-level member "strings" / "frames" / "stacks" (the cursor at it).
  void read_strings(JsonCursor& c);
  void read_frames(JsonCursor& c);
  void read_stacks(JsonCursor& c);
  bool complete() const { return has_strings_ && has_frames_ && has_stacks_; }

  // Checks every entry (as SnapshotFields::check_tables does), then gives each reference's
  // thread its run-wide stack. `total_frames` counts the frames threads expand to.
  void resolve(const std::vector<StackRef>& refs, JobSnapshot& out, SharedStacks& shared);

 private:
  // A frame entry: slot i holds a number (string index, line, pc...) when bit i of `present`
  // is set; locals are [name, value] string index pairs in locals_.
  struct RawFrame {
    std::array<std::uint64_t, 13> slot{};
    std::uint16_t present = 0;
    std::uint32_t locals_first = 0;
    std::uint32_t locals_count = 0;
  };

  void read_frame(JsonCursor& c, RawFrame& f);
  void read_locals(JsonCursor& c, RawFrame& f);
  void check_frame(const RawFrame& f) const;
  FrameView view(const RawFrame& f) const;

  const ReadLimits& lim_;
  bool has_strings_ = false, has_frames_ = false, has_stacks_ = false;
  std::vector<std::string_view> strings_;
  std::forward_list<std::string> decoded_;  // strings that held escapes (no allocation if none)
  std::vector<RawFrame> frames_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> locals_;
  std::vector<std::uint64_t> stack_ids_;  // every stack's frame indexes, one after another
  std::vector<std::size_t> stack_begin_;  // where stack i begins in stack_ids_ (+ one end)
};

}  // namespace hangscan
