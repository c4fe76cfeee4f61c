#include "python/value_repr.h"

#include "python/numpy_repr.h"
#include "util/parse_number.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

namespace hangscan::python {
namespace {

constexpr std::uint64_t kTagBits = 3;  // _PyStackRef tag bits (3.14)

char quote_for(const std::string& s) {
  bool single = s.find('\'') != std::string::npos;
  bool dbl = s.find('"') != std::string::npos;
  return single && !dbl ? '"' : '\'';
}

void escape_ascii(unsigned char c, char quote, std::string& out) {
  if (c == '\\' || c == static_cast<unsigned char>(quote)) {
    out += '\\';
    out += static_cast<char>(c);
  } else if (c == '\n') {
    out += "\\n";
  } else if (c == '\r') {
    out += "\\r";
  } else if (c == '\t') {
    out += "\\t";
  } else if (c < 0x20 || c == 0x7f) {
    out += fmt::format("\\x{:02x}", c);
  } else {
    out += static_cast<char>(c);
  }
}

// Python's float formatting of shortest round-trip digits in scientific form ("-1.2345e+05").
std::string python_float_format(std::string sci) {
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  auto e = sci.find('e');
  std::string_view exp_text = std::string_view(sci).substr(e + 1);
  if (exp_text.starts_with('+')) exp_text.remove_prefix(1);
  int exp = parse_int<int>(exp_text).value_or(0);
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  std::string out = negative ? "-" : "";
  if (exp < -4 || exp >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += fmt::format("e{}{:02}", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  } else if (exp < 0) {
    out += "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
  } else {
    auto point = static_cast<std::size_t>(exp) + 1;  // exp >= 0 here
    if (digits.size() <= point) {
      out += digits + std::string(point - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, point) + "." + digits.substr(point);
    }
  }
  return out;
}

template <typename F>
std::string shortest_repr(F d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  return python_float_format(std::string(buf, res.ptr));
}

}  // namespace

std::string float_repr(double d) { return shortest_repr(d); }
std::string float32_repr(float f) { return shortest_repr(f); }

std::string str_repr(const std::string& utf8, bool truncated) {
  char quote = quote_for(utf8);
  std::string out(1, quote);
  for (std::size_t i = 0; i < utf8.size(); ++i) {
    auto c = static_cast<unsigned char>(utf8[i]);
    // U+0080..U+00A0 and U+00AD are not printable: Python shows them as \x escapes.
    if (c == 0xc2 && i + 1 < utf8.size()) {
      auto n = static_cast<unsigned char>(utf8[i + 1]);
      if (n <= 0xa0 || n == 0xad) {
        out += fmt::format("\\x{:02x}", n);
        ++i;
        continue;
      }
    }
    if (c < 0x80) {
      escape_ascii(c, quote, out);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (truncated) out += "...";
  out += quote;
  return out;
}

std::string bytes_repr(const std::string& raw, bool truncated) {
  char quote = quote_for(raw);
  std::string out = "b";
  out += quote;
  for (char ch : raw) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      escape_ascii(c, quote, out);
    }
  }
  if (truncated) out += "...";
  out += quote;
  return out;
}

bool ValueRenderer::spend() {
  if (spent_ >= limits_.objects) return false;
  ++spent_;
  return true;
}

std::string ValueRenderer::render(std::uint64_t bits) {
  spent_ = 0;
  path_.clear();
  if (layout_.stackref && (bits & kTagBits) == kTagBits) {
    // A tagged small int (3.14 _PyStackRef), not a pointer.
    return fmt::format("{}", static_cast<std::int64_t>(bits) >> 2);
  }
  std::uint64_t obj = objects_.untag(bits);
  if (obj == 0) return "<unset>";
  auto type = objects_.type_name(obj);
  if (type && *type == "cell") {  // a local captured by an inner function: its content
    auto inner = objects_.read_word(obj + layout_.off.object_head);  // ob_ref
    if (!inner) return "<unreadable>";
    if (*inner == 0) return "<unset>";
    obj = *inner;
  }
  std::string out;
  value(obj, 0, out);
  if (out.size() > limits_.total_chars) {
    out.resize(limits_.total_chars);
    out += "...";
  }
  return out;
}

void ValueRenderer::value(std::uint64_t obj, std::size_t depth, std::string& out) {
  if (!spend()) {
    out += "...";
    return;
  }
  auto type = objects_.type_name(obj);
  if (!type) {
    out += "<unreadable>";
    return;
  }
  const std::string& t = *type;
  if (t == "list" || t == "tuple" || t == "dict" || t == "set" || t == "frozenset") {
    if (path_.count(obj) != 0 || depth >= limits_.depth) {
      out += t == "list"                 ? "[...]"
             : t == "tuple"              ? "(...)"
             : t == "dict" || t == "set" ? "{...}"
                                         : "frozenset({...})";
      return;
    }
    path_.insert(obj);
    if (t == "dict") {
      dict(obj, depth, out);
    } else if (t == "set" || t == "frozenset") {
      set(obj, t, depth, out);
    } else {
      sequence(obj, t, depth, out);
    }
    path_.erase(obj);
    return;
  }
  scalar(obj, t, out);
}

void ValueRenderer::scalar(std::uint64_t obj, const std::string& t, std::string& out) {
  const PyOffsets& o = layout_.off;
  if (t == "NoneType") {
    out += "None";
  } else if (t == "bool") {
    auto v = objects_.read_long(obj);
    out += !v ? "<unreadable>" : v->ndigits == 0 ? "False" : "True";
  } else if (t == "int") {
    auto v = objects_.read_long(obj);
    auto s = v ? long_to_decimal(*v, 5000) : std::nullopt;
    if (!v) {
      out += "<unreadable int>";
    } else if (!s) {
      out += fmt::format("<int of {} bits>", v->ndigits * 30);
    } else if (s->size() > limits_.int_chars) {
      std::size_t n = s->size() - (v->negative ? 1 : 0);
      out += s->substr(0, limits_.int_chars) + fmt::format("...({} digits)", n);
    } else {
      out += *s;
    }
  } else if (t == "float") {
    auto d = objects_.read_double(obj + o.float_value);
    out += d ? float_repr(*d) : "<unreadable float>";
  } else if (t == "str") {
    bool cut = false;
    auto s = objects_.read_str(obj, limits_.str_chars, &cut);
    out += s ? str_repr(*s, cut) : "<unreadable str>";
  } else if (t == "bytes") {
    auto n = objects_.var_size(obj, o.bytes_size);
    auto raw =
        n ? objects_.read_bytes(obj, std::min<std::uint64_t>(*n, limits_.str_chars)) : std::nullopt;
    if (!raw && n && *n > limits_.str_chars)
      raw = objects_.read_bytes_prefix(obj, limits_.str_chars);
    out += raw ? bytes_repr(*raw, n && *n > raw->size()) : "<unreadable bytes>";
  } else if (auto np = t.rfind("numpy.", 0) == 0 && !layout_.free_threaded
                           ? numpy_repr(objects_, obj, t, limits_.items)
                           : std::nullopt) {
    out += *np;
  } else if (auto tensor =
                 torch_ != nullptr && !layout_.free_threaded && is_torch_tensor(objects_, obj)
                     ? tensor_repr(objects_, obj, *torch_, limits_.items)
                     : std::nullopt) {
    out += *tensor;
  } else {
    out += fmt::format("<{} at {:#x}>", t, obj);
  }
}

void ValueRenderer::sequence(std::uint64_t obj, const std::string& t, std::size_t depth,
                             std::string& out) {
  const PyOffsets& o = layout_.off;
  bool tuple = t == "tuple";
  auto n = objects_.var_size(obj, tuple ? o.tuple_size : o.list_size);
  if (!n || *n > (std::uint64_t{1} << 40)) {
    out += "<unreadable " + t + ">";
    return;
  }
  std::size_t shown = static_cast<std::size_t>(std::min<std::uint64_t>(*n, limits_.items));
  std::vector<std::uint64_t> items(shown);
  std::uint64_t base = obj + static_cast<std::uint64_t>(tuple ? o.tuple_items : 0);
  if (!tuple) {
    auto p = objects_.read_word(obj + o.list_items);
    if (!p || (*p == 0 && shown != 0)) {
      out += "<unreadable list>";
      return;
    }
    base = *p;
  }
  if (shown != 0 && !objects_.read_words(base, items)) {
    out += "<unreadable " + t + ">";
    return;
  }
  out += tuple ? "(" : "[";
  for (std::size_t i = 0; i < shown; ++i) {
    if (i != 0) out += ", ";
    value(items[i], depth + 1, out);
  }
  if (*n > shown) out += fmt::format(", ... {} more", *n - shown);
  if (tuple && *n == 1) out += ",";
  out += tuple ? ")" : "]";
}

void ValueRenderer::dict(std::uint64_t obj, std::size_t depth, std::string& out) {
  std::size_t total = 0;
  auto items = objects_.dict_items(obj, limits_.items, &total);
  if (!items) {
    out += "<unreadable dict>";
    return;
  }
  out += "{";
  for (std::size_t i = 0; i < items->size(); ++i) {
    if (i != 0) out += ", ";
    value((*items)[i].key, depth + 1, out);
    out += ": ";
    value((*items)[i].value, depth + 1, out);
  }
  if (total > items->size())
    out += fmt::format("{}... {} more", items->empty() ? "" : ", ", total - items->size());
  out += "}";
}

void ValueRenderer::set(std::uint64_t obj, const std::string& t, std::size_t depth,
                        std::string& out) {
  std::size_t used = 0;
  auto keys = objects_.set_items(obj, limits_.items, &used);
  if (!keys) {
    out += "<unreadable " + t + ">";
    return;
  }
  bool frozen = t == "frozenset";
  if (used == 0) {
    out += frozen ? "frozenset()" : "set()";
    return;
  }
  out += frozen ? "frozenset({" : "{";
  for (std::size_t i = 0; i < keys->size(); ++i) {
    if (i != 0) out += ", ";
    value((*keys)[i], depth + 1, out);
  }
  if (used > keys->size()) out += fmt::format(", ... {} more", used - keys->size());
  out += frozen ? "})" : "}";
}

}  // namespace hangscan::python
