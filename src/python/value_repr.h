// Python-style renderings of a target's objects for --locals, read from memory only.
//
// Why: a hang is often explained by a value (the rank a loop waits for, the shape of a batch,
// the key a dict lacks). Values are shown as Python's repr() would show them
// (`[-1234, 5678]`, `('a', 'b')`, `{'a': False}`) so they read like the program, but every
// rendering is bounded (depth, items per container, characters per string, objects read), the
// bound is shown (`[0, 1, 2, ... 997 more]`), and nothing in the target is ever called:
// objects of other types are `<TypeName at 0x...>`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "python/objects.h"
#include "python/torch_repr.h"

namespace hangscan::python {

struct ReprLimits {
  std::size_t depth = 3;          // containers nested deeper show as [...], (...), {...}
  std::size_t items = 10;         // items per container before "... N more"
  std::size_t str_chars = 60;     // characters of one str/bytes before "..."
  std::size_t int_chars = 60;     // digits of an int before "...(N digits)"
  std::size_t objects = 200;      // objects read for one value before "..."
  std::size_t total_chars = 400;  // characters of the whole rendering
};

class ValueRenderer {
 public:
  // `torch`: the layout of the target's torch release (torch_repr.h), nullptr when torch is
  // not imported or its release has no generated row (tensors stay `<Tensor at 0x...>`).
  ValueRenderer(ObjectReader& objects, const PyLayout& layout, const TorchLayout* torch = nullptr,
                ReprLimits limits = {})
      : objects_(objects), layout_(layout), torch_(torch), limits_(limits) {}

  // The rendering of one frame slot (a PyObject*, or a tagged _PyStackRef on 3.14).
  std::string render(std::uint64_t bits);

 private:
  void value(std::uint64_t obj, std::size_t depth, std::string& out);
  void sequence(std::uint64_t obj, const std::string& type, std::size_t depth, std::string& out);
  void dict(std::uint64_t obj, std::size_t depth, std::string& out);
  void set(std::uint64_t obj, const std::string& type, std::size_t depth, std::string& out);
  void scalar(std::uint64_t obj, const std::string& type, std::string& out);
  bool spend();  // one more object read; false when the budget is gone

  ObjectReader& objects_;
  const PyLayout& layout_;
  const TorchLayout* torch_;
  ReprLimits limits_;
  std::size_t spent_ = 0;
  std::set<std::uint64_t> path_;  // containers being rendered (a loop shows as [...])
};

// Python's repr of a float (shortest round-trip digits, exponent outside 1e-4..1e16).
std::string float_repr(double d);
// The same for a 32-bit float, with the shortest digits that round-trip as float32 (as
// numpy prints a float32).
std::string float32_repr(float f);
// Python's repr of a str given as UTF-8, cut after `max_chars` characters ("..." before the
// closing quote) when `truncated`.
std::string str_repr(const std::string& utf8, bool truncated);
// Python's repr of bytes.
std::string bytes_repr(const std::string& raw, bool truncated);

}  // namespace hangscan::python
