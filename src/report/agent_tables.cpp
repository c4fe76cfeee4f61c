// The agent tables read from a cursor, checked, and resolved into run-wide stacks.
#include "report/agent_tables.h"
#include "util/parse_number.h"

#include <limits>
#include <optional>

namespace hangscan {

namespace {
constexpr std::size_t kFrameSlots = 13;
// Slots holding string indexes: function, file, module, build_id, source.
constexpr std::uint16_t kStringSlots = 1u << 1 | 1u << 2 | 1u << 4 | 1u << 7 | 1u << 12;
constexpr std::size_t kLocalsSlot = 8;
}  // namespace

void AgentTables::read_strings(JsonCursor& c) {
  if (has_strings_ || c.peek() != JsonCursor::Kind::array) decline();
  has_strings_ = true;
  c.begin_array();
  while (c.next_element()) {
    if (strings_.size() >= lim_.max_table) decline();
    std::string_view s = c.string();
    if (s.size() > lim_.max_string) decline();
    if (!c.last_string_stable()) s = decoded_.emplace_front(s);
    strings_.push_back(s);
  }
}

void AgentTables::read_frames(JsonCursor& c) {
  if (has_frames_ || c.peek() != JsonCursor::Kind::array) decline();
  has_frames_ = true;
  c.begin_array();
  while (c.next_element()) {
    if (frames_.size() >= lim_.max_table) decline();
    read_frame(c, frames_.emplace_back());
  }
}

// [kind, function, file, line, module, pc, offset, build_id, locals, column, end_line,
// end_column, source]: null slots and trailing ones absent.
void AgentTables::read_frame(JsonCursor& c, RawFrame& f) {
  if (c.peek() != JsonCursor::Kind::array) decline();
  c.begin_array();
  std::size_t i = 0;
  for (; c.next_element(); ++i) {
    if (i >= kFrameSlots) decline();
    if (i > 0 && c.peek() == JsonCursor::Kind::null) {
      c.null();
      continue;
    }
    if (i == kLocalsSlot) {
      read_locals(c, f);
    } else if (i == 0) {
      f.slot[0] = static_cast<std::uint64_t>(c.integer(0, 3));
    } else if (i == 3) {
      f.slot[3] = static_cast<std::uint64_t>(c.integer(kIntMin, kIntMax));
    } else if (i >= 9 && i <= 11) {
      f.slot[i] = static_cast<std::uint64_t>(c.integer(0, kIntMax));
    } else {  // string indexes, pc, offset
      f.slot[i] = c.unsigned_int();
    }
    f.present = static_cast<std::uint16_t>(f.present | 1u << i);
  }
  if (i == 0) decline();  // "empty frame"
}

void AgentTables::read_locals(JsonCursor& c, RawFrame& f) {
  if (c.peek() != JsonCursor::Kind::array) decline();
  f.locals_first = static_cast<std::uint32_t>(locals_.size());
  c.begin_array();
  while (c.next_element()) {
    if (f.locals_count >= lim_.max_list || c.peek() != JsonCursor::Kind::array) decline();
    c.begin_array();
    std::uint64_t pair[2];
    for (std::uint64_t& v : pair) {
      if (!c.next_element()) decline();
      v = c.unsigned_int();
    }
    if (c.next_element()) decline();
    locals_.emplace_back(pair[0], pair[1]);
    ++f.locals_count;
  }
}

void AgentTables::read_stacks(JsonCursor& c) {
  if (has_stacks_ || c.peek() != JsonCursor::Kind::array) decline();
  has_stacks_ = true;
  c.begin_array();
  while (c.next_element()) {
    if (stack_begin_.size() >= lim_.max_table || c.peek() != JsonCursor::Kind::array) decline();
    stack_begin_.push_back(stack_ids_.size());
    const std::size_t first = stack_ids_.size();
    c.begin_array();
    while (c.next_element()) {
      if (stack_ids_.size() - first >= lim_.max_frames) decline();
      stack_ids_.push_back(c.unsigned_int());
    }
  }
}

void AgentTables::check_frame(const RawFrame& f) const {
  for (std::size_t i = 1; i < kFrameSlots; ++i) {
    if ((kStringSlots >> i & 1u) && (f.present >> i & 1u) && f.slot[i] >= strings_.size())
      decline();
  }
  for (std::uint32_t k = 0; k < f.locals_count; ++k) {
    const auto& [name, value] = locals_[f.locals_first + k];
    if (name >= strings_.size() || value >= strings_.size()) decline();
  }
}

FrameView AgentTables::view(const RawFrame& f) const {
  auto has = [&](std::size_t i) { return (f.present >> i & 1u) != 0; };
  auto text = [&](std::size_t i) { return strings_[f.slot[i]]; };
  auto num = [&](std::size_t i) { return static_cast<int>(static_cast<std::int64_t>(f.slot[i])); };
  FrameView v;
  v.kind = static_cast<FrameKind>(f.slot[0]);
  if (has(1)) v.function = text(1);
  if (has(2)) v.file = text(2);
  if (has(3)) v.line = num(3);
  if (has(4)) v.module = text(4);
  if (has(5)) v.pc = f.slot[5];
  if (has(6)) v.offset = f.slot[6];
  if (has(7)) v.build_id = text(7);
  for (std::uint32_t k = 0; k < f.locals_count; ++k) {
    const auto& [name, value] = locals_[f.locals_first + k];
    v.locals.emplace_back(strings_[name], strings_[value]);
  }
  if (has(9)) v.column = num(9);
  if (has(10)) v.end_line = num(10);
  if (has(11)) v.end_column = num(11);
  if (has(12)) v.source = text(12);
  return v;
}

void AgentTables::resolve(const std::vector<StackRef>& refs, JobSnapshot& out,
                          SharedStacks& shared) {
  if (!complete()) decline();
  for (const RawFrame& f : frames_) check_frame(f);
  for (std::uint64_t id : stack_ids_) {
    if (id >= frames_.size()) decline();
  }
  const std::size_t stacks = stack_begin_.size();
  stack_begin_.push_back(stack_ids_.size());
  std::size_t total = 0;
  for (const StackRef& r : refs) {
    if (r.stack >= stacks) decline();
    total += stack_begin_[r.stack + 1] - stack_begin_[r.stack];
    if (total > lim_.max_total_frames) decline();
  }
  // Only stacks a thread uses are built, each frame once.
  std::vector<std::int64_t> run_frame(frames_.size(), -1);
  std::vector<std::optional<FrameStack>> built(stacks);
  std::vector<std::uint32_t> ids;
  auto lock = shared.hold();
  for (const StackRef& r : refs) {
    std::optional<FrameStack>& s = built[r.stack];
    if (!s) {
      ids.clear();
      for (std::size_t k = stack_begin_[r.stack]; k < stack_begin_[r.stack + 1]; ++k) {
        const std::size_t fi = stack_ids_[k];
        if (run_frame[fi] < 0) run_frame[fi] = shared.frame_id(view(frames_[fi]));
        ids.push_back(static_cast<std::uint32_t>(run_frame[fi]));
      }
      s = shared.stack(ids);
    }
    ThreadSnapshot& t = out.processes[r.process].threads[r.thread];
    (r.field == 0 ? t.frames : r.field == 1 ? t.native_frames : t.kernel_frames) = *s;
  }
}

}  // namespace hangscan
