// BoundedFields: the one reader of fields of untrusted JSON values.
//
// Why: every document hangscan reads from another machine (agent answers, core answers, saved
// reports) may be truncated, broken or hostile. One class checks every value's type, range and
// size and names the JSON path of what is wrong, so a new reader cannot forget a bound and the
// same fault reads the same way in every document ("cores[0].pid: -5 is out of range").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hangscan {

// Thrown by BoundedFields (and the readers built on it) to unwind to the one catch of a
// reader's entry point, which turns it into an Error. Never crosses a library interface.
struct BadDocument {
  std::string message;
};

// A JSON path ("processes[3].threads[0].tid") kept as links on the stack and rendered only
// when an error is reported: building strings per field made reading 5x slower.
struct JsonPath {
  const JsonPath* parent = nullptr;
  const char* key = nullptr;  // member name; null for an array index (or the root)
  std::size_t index = 0;

  std::string render() const;
};

inline JsonPath at(const JsonPath& p, const char* key) { return JsonPath{&p, key, 0}; }
inline JsonPath at(const JsonPath& p, std::size_t i) { return JsonPath{&p, nullptr, i}; }

// Throws BadDocument "PATH: what" (or just "what" at the root).
[[noreturn]] void fail(const JsonPath& path, const std::string& what);

// Checked access to the members of nlohmann values. Absent and null members are the same.
class BoundedFields {
 public:
  using json = nlohmann::json;

  BoundedFields(std::size_t max_string, std::size_t max_list)
      : max_string_(max_string), max_list_(max_list) {}

  static const json* member(const json& obj, const char* key);
  const json& object(const json& v, const JsonPath& path) const;
  const json& check_array(const json& v, const JsonPath& path, std::size_t max) const;
  // The array member `key` (at most `max` entries); an empty array when absent and not required.
  const json& array(const json& obj, const char* key, const JsonPath& path, std::size_t max,
                    bool required) const;

  std::string string_value(const json& v, const JsonPath& path) const;
  std::string str(const json& obj, const char* key, const JsonPath& path) const;
  std::optional<std::string> opt_str(const json& obj, const char* key, const JsonPath& path) const;
  std::vector<std::string> strings(const json& obj, const char* key, const JsonPath& path) const;

  std::int64_t int_value(const json& v, const JsonPath& path, std::int64_t lo,
                         std::int64_t hi) const;
  std::optional<int> opt_int(const json& obj, const char* key, const JsonPath& path, int lo,
                             int hi) const;
  int req_int(const json& obj, const char* key, const JsonPath& path, int lo, int hi) const;
  std::optional<std::int64_t> opt_int64(const json& obj, const char* key, const JsonPath& path,
                                        std::int64_t lo, std::int64_t hi) const;
  // A finite number in [lo, hi] (seconds, times): NaN cannot come from JSON, huge values can.
  std::optional<double> opt_number(const json& obj, const char* key, const JsonPath& path,
                                   double lo, double hi) const;
  std::optional<std::uint64_t> opt_bytes(const json& obj, const char* key,
                                         const JsonPath& path) const;
  std::uint64_t unsigned_value(const json& v, const JsonPath& path) const;
  // An index into a table of `size` entries ("string", "frame": what the table holds).
  std::size_t index(const json& v, std::size_t size, const JsonPath& path, const char* what) const;

  bool boolean(const json& obj, const char* key, const JsonPath& path) const;
  std::optional<bool> opt_bool(const json& obj, const char* key, const JsonPath& path) const;
  // A "0x.." string (or an unsigned number); 0 when absent.
  std::uint64_t hex(const json& obj, const char* key, const JsonPath& path) const;
  // A one-letter process or thread state; '?' when absent.
  char state(const json& obj, const char* key, const JsonPath& path) const;

  std::size_t max_string() const { return max_string_; }
  std::size_t max_list() const { return max_list_; }

 private:
  std::size_t max_string_;
  std::size_t max_list_;  // string lists (cmdline, notes, ...)
};

}  // namespace hangscan
