// AgentValues: the values and small records of an agent document, read from the cursor with
// the checks SnapshotFields makes (strings within bounds, numbers in range, a repeated key
// declines), for the fast agent reader.
//
// Why apart from the reader (agent_reader.h): the reader follows the document's structure (the
// top level, its processes and their threads, the stack references); what it meets on the way
// (a string, a flag, a list, a memory or death record, a diagnostic, a wait edge) is read the
// same way wherever it stands. Anything the reference reader would word as an error throws
// Decline (agent_tables.h), and the reference reader reads the document instead.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hangscan/model.h"
#include "report/agent_tables.h"
#include "report/json_cursor.h"
#include "report/json_reader.h"

namespace hangscan {

// The position of `key` in `names`, or -1 (a member the reference reader ignores too).
template <std::size_t N>
int key_index(std::string_view key, const std::array<std::string_view, N>& names) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == key) return static_cast<int>(i);
  }
  return -1;
}

// Members of one object: a key repeated (the DOM keeps the last) declines; a null value is an
// absent member, as BoundedFields::member() has it.
class Members {
 public:
  // The next known member with a non-null value: its index, or -1 at the end.
  template <std::size_t N>
  int next(JsonCursor& c, const std::array<std::string_view, N>& names) {
    std::string_view key;
    while (c.next_member(key)) {
      const int k = key_index(key, names);
      if (k < 0) {
        c.skip();
        continue;
      }
      if (seen_ >> k & 1u) throw Decline{};
      seen_ |= std::uint64_t{1} << k;
      if (c.peek() == JsonCursor::Kind::null) {
        c.null();
        continue;
      }
      return k;
    }
    return -1;
  }

 private:
  std::uint64_t seen_ = 0;
};

// The cursor over one document and its limits; the fast reader (agent_reader.cpp) derives from
// it to read the document's structure with these values and records.
class AgentValues {
 public:
  AgentValues(std::string_view text, const ReadLimits& limits)
      : c_(text, limits.max_depth), lim_(limits) {}

 protected:
  using Kind = JsonCursor::Kind;

  // Values (the cursor at a non-null value). Inline: the reader calls them for every value.
  std::string_view text_view() {
    std::string_view s = c_.string();
    if (s.size() > lim_.max_string) decline();
    return s;
  }
  std::string text() { return std::string(text_view()); }
  std::vector<std::string> string_list() {
    std::vector<std::string> out;
    array(lim_.max_list, [&] { out.push_back(text()); });
    return out;
  }
  bool flag() {
    if (c_.peek() != Kind::boolean) decline();
    return c_.boolean();
  }
  double number_in(double lo, double hi) {
    const double x = c_.number().as_double();
    if (!(x >= lo && x <= hi)) decline();
    return x;
  }
  char state() {
    std::string_view s = text_view();
    if (s.size() != 1) decline();
    return s[0];
  }
  // Arrays: calls `each()` per element, at most `max` of them.
  template <class F>
  void array(std::size_t max, F&& each) {
    if (c_.peek() != Kind::array) decline();
    c_.begin_array();
    for (std::size_t n = 0; c_.next_element(); ++n) {
      if (n >= max) decline();
      each();
    }
  }
  void object() {
    if (c_.peek() != Kind::object) decline();
    c_.begin_object();
  }

  // Records (agent_values.cpp).
  MemoryUsage memory();
  ContainerInfo container();
  PythonInfo python();
  Death death();
  std::vector<Diagnostic> diagnostics();
  std::vector<WaitEdge> waits_on();
  std::vector<UnreachableNode> unreachable();

  JsonCursor c_;
  const ReadLimits& lim_;
};

}  // namespace hangscan
