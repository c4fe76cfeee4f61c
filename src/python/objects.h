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
#include <string_view>
#include <vector>

#include "python/layout.h"
#include "target/memory_reader.h"

namespace hangscan::python {

inline constexpr std::size_t kMaxStringChars = 4096;     // names, file names
inline constexpr std::size_t kMaxTableBytes = 1 << 20;   // line tables
inline constexpr std::size_t kMaxTupleItems = 65536;     // co_varnames and friends
inline constexpr std::size_t kMaxDictEntries = 1 << 16;  // entries scanned in one dict

// One live entry of a dict.
struct DictItem {
  std::uint64_t key = 0;
  std::uint64_t value = 0;
};

// A PyLong's value, bounded: digits beyond `kMaxLongDigits` are not read.
struct LongValue {
  bool negative = false;
  std::vector<std::uint32_t> digits;  // 30-bit digits, least significant first
  std::size_t ndigits = 0;            // as the object says (may exceed digits.size())
};
inline constexpr std::size_t kMaxLongDigits = 700;  // 21,000 bits, ~6,300 decimal digits

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
  // The first `len` bytes of a bytes object.
  std::optional<std::string> read_bytes_prefix(std::uint64_t obj, std::size_t len);
  // One pointer-sized word, a run of them, a double.
  std::optional<std::uint64_t> read_word(std::uint64_t addr);
  bool read_words(std::uint64_t addr, std::vector<std::uint64_t>& out);
  std::optional<double> read_double(std::uint64_t addr);
  // `len` raw bytes (a C struct field or array element of an extension type).
  bool read_raw(std::uint64_t addr, void* buf, std::size_t len) {
    return mem_.read_exact(addr, buf, len);
  }
  // Pointer stored in a frame slot or f_executable: strips _PyStackRef tag bits on 3.14+.
  std::uint64_t untag(std::uint64_t bits) const;

  // The live entries of a dict in table order, at most `max`; `total` receives ma_used.
  // nullopt when the dict or its keys are unreadable or implausible.
  std::optional<std::vector<DictItem>> dict_items(std::uint64_t dict, std::size_t max,
                                                  std::size_t* total = nullptr);
  // The keys of a set or frozenset in table order, at most `max`; `total` receives its size.
  // nullopt when the set or its table is unreadable or implausible.
  std::optional<std::vector<std::uint64_t>> set_items(std::uint64_t set, std::size_t max,
                                                      std::size_t* total = nullptr);
  // The value stored under the str key `key`, nullopt when absent or unreadable.
  std::optional<std::uint64_t> dict_get(std::uint64_t dict, std::string_view key);
  // An attribute stored in an instance's __dict__ (or its inline values, 3.11+).
  std::optional<std::uint64_t> attribute(std::uint64_t obj, std::string_view name);
  // True when `obj` is a str equal to `s` (reads no more than s.size() + 1 characters).
  bool str_equals(std::uint64_t obj, std::string_view s);
  // The value of an int (or bool) object.
  std::optional<LongValue> read_long(std::uint64_t obj);
  // The type object of `obj` (0 when unreadable).
  std::uint64_t type_of(std::uint64_t obj);

 private:
  // The value under the str key `key` among `items`.
  std::optional<std::uint64_t> value_of(const std::optional<std::vector<DictItem>>& items,
                                        std::string_view key);
  // Items of the shared keys of a split table with their values from `values` (an array).
  std::optional<std::vector<DictItem>> split_items(std::uint64_t keys, std::uint64_t values,
                                                   std::size_t max);

  MemoryReader& mem_;
  const PyLayout& layout_;
  std::map<std::uint64_t, std::string> type_names_;
};

// Decimal digits of a long value ("-1234"); `max_chars` bounds the work (longer: nullopt).
std::optional<std::string> long_to_decimal(const LongValue& v, std::size_t max_chars);

}  // namespace hangscan::python
