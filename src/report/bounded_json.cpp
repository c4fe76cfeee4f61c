// Type-, range- and size-checked fields of untrusted JSON.
#include "report/bounded_json.h"

#include <limits>

#include <fmt/format.h>

#include "util/parse_number.h"

namespace hangscan {

std::string JsonPath::render() const {
  if (!parent) return {};
  std::string prefix = parent->render();
  if (key) return prefix.empty() ? std::string(key) : prefix + "." + key;
  return prefix + "[" + std::to_string(index) + "]";
}

void fail(const JsonPath& path, const std::string& what) {
  std::string where = path.render();
  throw BadDocument{where.empty() ? what : where + ": " + what};
}

using json = nlohmann::json;

const json* BoundedFields::member(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

const json& BoundedFields::object(const json& v, const JsonPath& path) const {
  if (!v.is_object()) fail(path, fmt::format("expected an object, got {}", v.type_name()));
  return v;
}

const json& BoundedFields::check_array(const json& v, const JsonPath& path, std::size_t max) const {
  if (!v.is_array()) fail(path, fmt::format("expected an array, got {}", v.type_name()));
  if (v.size() > max)
    fail(path, fmt::format("{} entries, more than the limit of {}", v.size(), max));
  return v;
}

const json& BoundedFields::array(const json& obj, const char* key, const JsonPath& path,
                                 std::size_t max, bool required) const {
  static const json kEmpty = json::array();
  const json* v = member(obj, key);
  if (!v) {
    if (required) fail(at(path, key), "missing");
    return kEmpty;
  }
  return check_array(*v, at(path, key), max);
}

std::string BoundedFields::string_value(const json& v, const JsonPath& path) const {
  if (!v.is_string()) fail(path, fmt::format("expected a string, got {}", v.type_name()));
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() > max_string_)
    fail(path, fmt::format("string of {} bytes, more than {}", s.size(), max_string_));
  return s;
}

std::string BoundedFields::str(const json& obj, const char* key, const JsonPath& path) const {
  const json* v = member(obj, key);
  return v ? string_value(*v, at(path, key)) : std::string();
}

std::optional<std::string> BoundedFields::opt_str(const json& obj, const char* key,
                                                  const JsonPath& path) const {
  const json* v = member(obj, key);
  if (!v) return std::nullopt;
  return string_value(*v, at(path, key));
}

std::vector<std::string> BoundedFields::strings(const json& obj, const char* key,
                                                const JsonPath& path) const {
  const json& arr = array(obj, key, path, max_list_, false);
  std::vector<std::string> out;
  out.reserve(arr.size());
  const JsonPath list = at(path, key);
  for (std::size_t i = 0; i < arr.size(); ++i) out.push_back(string_value(arr[i], at(list, i)));
  return out;
}

std::int64_t BoundedFields::int_value(const json& v, const JsonPath& path, std::int64_t lo,
                                      std::int64_t hi) const {
  std::int64_t x = 0;
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(hi)) fail(path, fmt::format("{} is out of range", u));
    x = static_cast<std::int64_t>(u);
  } else if (v.is_number_integer()) {
    x = v.get<std::int64_t>();
  } else {
    fail(path, fmt::format("expected an integer, got {}", v.type_name()));
  }
  if (x < lo || x > hi) fail(path, fmt::format("{} is out of range", x));
  return x;
}

std::optional<int> BoundedFields::opt_int(const json& obj, const char* key, const JsonPath& path,
                                          int lo, int hi) const {
  auto v = opt_int64(obj, key, path, lo, hi);
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

std::optional<std::int64_t> BoundedFields::opt_int64(const json& obj, const char* key,
                                                     const JsonPath& path, std::int64_t lo,
                                                     std::int64_t hi) const {
  const json* v = member(obj, key);
  if (!v) return std::nullopt;
  return int_value(*v, at(path, key), lo, hi);
}

int BoundedFields::req_int(const json& obj, const char* key, const JsonPath& path, int lo,
                           int hi) const {
  const json* v = member(obj, key);
  if (!v) fail(at(path, key), "missing");
  return static_cast<int>(int_value(*v, at(path, key), lo, hi));
}

std::optional<double> BoundedFields::opt_number(const json& obj, const char* key,
                                                const JsonPath& path, double lo, double hi) const {
  const json* v = member(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number())
    fail(at(path, key), fmt::format("expected a number, got {}", v->type_name()));
  double x = v->get<double>();
  if (!(x >= lo && x <= hi)) fail(at(path, key), fmt::format("{} is out of range", x));
  return x;
}

std::optional<std::uint64_t> BoundedFields::opt_bytes(const json& obj, const char* key,
                                                      const JsonPath& path) const {
  auto v = opt_int64(obj, key, path, 0, std::numeric_limits<std::int64_t>::max());
  if (!v) return std::nullopt;
  return static_cast<std::uint64_t>(*v);
}

std::uint64_t BoundedFields::unsigned_value(const json& v, const JsonPath& path) const {
  if (!v.is_number_unsigned())
    fail(path, fmt::format("expected an unsigned integer, got {}", v.type_name()));
  return v.get<std::uint64_t>();
}

std::size_t BoundedFields::index(const json& v, std::size_t size, const JsonPath& path,
                                 const char* what) const {
  if (!v.is_number_unsigned())
    fail(path, fmt::format("expected a {} index, got {}", what, v.type_name()));
  auto id = v.get<std::uint64_t>();
  if (id >= size) fail(path, fmt::format("{} {} does not exist", what, id));
  return static_cast<std::size_t>(id);
}

bool BoundedFields::boolean(const json& obj, const char* key, const JsonPath& path) const {
  return opt_bool(obj, key, path).value_or(false);
}

std::optional<bool> BoundedFields::opt_bool(const json& obj, const char* key,
                                            const JsonPath& path) const {
  const json* v = member(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean())
    fail(at(path, key), fmt::format("expected a boolean, got {}", v->type_name()));
  return v->get<bool>();
}

std::uint64_t BoundedFields::hex(const json& obj, const char* key, const JsonPath& path) const {
  const json* v = member(obj, key);
  if (!v) return 0;
  if (v->is_number_unsigned()) return v->get<std::uint64_t>();
  std::string s = string_value(*v, at(path, key));
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
    fail(at(path, key), "expected a \"0x..\" string");
  auto out = parse_int<std::uint64_t>(std::string_view(s).substr(2), 16);
  if (!out || s.find_first_of(" \t\r\n") != std::string::npos)
    fail(at(path, key), fmt::format("bad hex \"{}\"", s.substr(0, 40)));
  return *out;
}

char BoundedFields::state(const json& obj, const char* key, const JsonPath& path) const {
  auto s = opt_str(obj, key, path);
  if (!s) return '?';
  if (s->size() != 1) fail(at(path, key), "expected a one-letter state");
  return (*s)[0];
}

}  // namespace hangscan
