// Reading CPython objects (str, bytes, tuple, int, float, type names) out of a target.
//
// Why: names, file names and local values live in Python objects whose layout depends on the
// version; this class reads them through a PyLayout and a MemoryReader, with every length
// bounded, so a torn or hostile object yields nullopt or a placeholder instead of a huge
// allocation or a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "python/layout.h"
#include "target/memory_reader.h"

namespace hangscan::python {

inline constexpr std::size_t kMaxStringChars = 4096;     // names, file names
inline constexpr std::size_t kMaxTableBytes = 1 << 20;   // line tables
inline constexpr std::size_t kMaxTupleItems = 65536;     // co_varnames and friends
inline constexpr std::size_t kLocalValueChars = 60;      // --locals str values

class ObjectReader {
 public:
  ObjectReader(MemoryReader& mem, const PyLayout& layout) : mem_(mem), layout_(layout) {}

  // A str object as UTF-8, at most `max_chars` characters (truncated is set when cut).
  // nullopt when unreadable or not plausible (absurd length, unknown kind).
  std::optional<std::string> read_str(std::uint64_t obj, std::size_t max_chars = kMaxStringChars,
                                      bool* truncated = nullptr);
  // The content of a bytes object, nullopt when longer than `max_len` or unreadable.
  std::optional<std::string> read_bytes(std::uint64_t obj, std::size_t max_len = kMaxTableBytes);
  // ob_size of a var object (tuple, list, bytes), nullopt when unreadable or negative.
  std::optional<std::uint64_t> var_size(std::uint64_t obj, std::int64_t size_offset);
  // Items of a tuple, nullopt when longer than `max` or unreadable.
  std::optional<std::vector<std::uint64_t>> tuple_items(std::uint64_t tuple,
                                                        std::size_t max = kMaxTupleItems);
  // tp_name of the object's type; cached per type address.
  std::optional<std::string> type_name(std::uint64_t obj);
  // The short rendering used by --locals: 42, 1.5, True, None, 'text', bytes(len=3),
  // tuple(len=2), list(len=0), <dict>.
  std::string short_value(std::uint64_t obj);
  // Pointer stored in a frame slot or f_executable: strips _PyStackRef tag bits on 3.14+.
  std::uint64_t untag(std::uint64_t bits) const;

 private:
  std::optional<std::string> read_int(std::uint64_t obj);

  MemoryReader& mem_;
  const PyLayout& layout_;
  std::map<std::uint64_t, std::string> type_names_;
};

// Appends the UTF-8 encoding of a code point (invalid ones become U+FFFD).
void append_utf8(std::string& out, std::uint32_t cp);

}  // namespace hangscan::python
