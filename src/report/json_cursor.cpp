// The strict pull tokenizer: structure, strings (escapes, UTF-8), numbers.
#include "report/json_cursor.h"

#include "util/utf8.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace hangscan {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

double JsonCursor::Number::as_double() const {
  switch (type) {
    case Type::unsigned_int:
      return static_cast<double>(u);
    case Type::integer:
      return static_cast<double>(i);
    default:
      return d;
  }
}

void JsonCursor::skip_space() {
  while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
}

char JsonCursor::next_byte() {
  skip_space();
  if (pos_ >= text_.size()) throw Stop{};
  return text_[pos_];
}

void JsonCursor::expect(char c) {
  if (next_byte() != c) throw Stop{};
  ++pos_;
}

JsonCursor::Kind JsonCursor::peek() {
  switch (next_byte()) {
    case '{':
      return Kind::object;
    case '[':
      return Kind::array;
    case '"':
      return Kind::string;
    case 't':
    case 'f':
      return Kind::boolean;
    case 'n':
      return Kind::null;
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
      return Kind::number;
    default:
      throw Stop{};
  }
}

void JsonCursor::open(char c) {
  expect(c);
  if (++depth_ > max_depth_) throw Stop{};
  first_ = true;
}

void JsonCursor::begin_object() { open('{'); }
void JsonCursor::begin_array() { open('['); }

// Past the separator before the next item of the innermost container, or past its `close`.
bool JsonCursor::next_item(char close) {
  const char c = next_byte();
  const bool first = first_;
  first_ = false;
  if (c == close) {
    ++pos_;
    --depth_;
    return false;
  }
  if (!first) {
    if (c != ',') throw Stop{};
    ++pos_;
  }
  return true;
}

bool JsonCursor::next_member(std::string_view& key) {
  if (!next_item('}')) return false;
  if (next_byte() != '"') throw Stop{};
  key = scan_string();
  expect(':');
  return true;
}

bool JsonCursor::next_element() { return next_item(']'); }

std::string_view JsonCursor::string() {
  if (next_byte() != '"') throw Stop{};
  return scan_string();
}

// At the opening quote. Plain runs stay views into the document; the first escape switches
// to decoding into scratch_.
std::string_view JsonCursor::scan_string() {
  ++pos_;
  const std::size_t start = pos_;
  const char* p = text_.data();
  const std::size_t n = text_.size();
  stable_ = true;
  while (true) {
    while (pos_ < n && static_cast<unsigned char>(p[pos_]) >= 0x20 && p[pos_] != '"' &&
           p[pos_] != '\\' && static_cast<unsigned char>(p[pos_]) < 0x80) {
      ++pos_;
    }
    if (pos_ >= n) throw Stop{};
    const auto c = static_cast<unsigned char>(p[pos_]);
    if (c == '"') break;
    if (c < 0x20) throw Stop{};
    if (c >= 0x80) {
      check_utf8();
      continue;
    }
    // A backslash: decode the rest of the string into scratch_.
    if (stable_) {
      scratch_.assign(p + start, pos_ - start);
      stable_ = false;
    }
    decode_escape();
    const std::size_t run = pos_;
    while (pos_ < n && p[pos_] != '"' && p[pos_] != '\\') {
      const auto b = static_cast<unsigned char>(p[pos_]);
      if (b < 0x20) throw Stop{};
      if (b >= 0x80) check_utf8();
      else ++pos_;
    }
    scratch_.append(p + run, pos_ - run);
    if (pos_ >= n) throw Stop{};
    if (p[pos_] == '"') break;
  }
  std::string_view out = stable_ ? text_.substr(start, pos_ - start) : std::string_view(scratch_);
  ++pos_;
  return out;
}

// One UTF-8 sequence at pos_ (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF).
void JsonCursor::check_utf8() {
  const auto* p = reinterpret_cast<const unsigned char*>(text_.data()) + pos_;
  const std::size_t left = text_.size() - pos_;
  const unsigned char b = p[0];
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    len = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    len = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    throw Stop{};
  }
  if (left < len || p[1] < lo || p[1] > hi) throw Stop{};
  for (std::size_t k = 2; k < len; ++k) {
    if (p[k] < 0x80 || p[k] > 0xBF) throw Stop{};
  }
  pos_ += len;
}

// At a backslash: appends what it stands for to scratch_.
void JsonCursor::decode_escape() {
  auto hex4 = [&]() -> std::uint32_t {
    if (text_.size() - pos_ < 4) throw Stop{};
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      int d = hex_digit(text_[pos_++]);
      if (d < 0) throw Stop{};
      v = v << 4 | static_cast<std::uint32_t>(d);
    }
    return v;
  };
  ++pos_;
  if (pos_ >= text_.size()) throw Stop{};
  const char c = text_[pos_++];
  switch (c) {
    case '"':
    case '\\':
    case '/':
      scratch_.push_back(c);
      return;
    case 'b':
      scratch_.push_back('\b');
      return;
    case 'f':
      scratch_.push_back('\f');
      return;
    case 'n':
      scratch_.push_back('\n');
      return;
    case 'r':
      scratch_.push_back('\r');
      return;
    case 't':
      scratch_.push_back('\t');
      return;
    case 'u':
      break;
    default:
      throw Stop{};
  }
  std::uint32_t cp = hex4();
  if (cp >= 0xDC00 && cp <= 0xDFFF) throw Stop{};  // a low surrogate alone
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    if (text_.size() - pos_ < 2 || text_[pos_] != '\\' || text_[pos_ + 1] != 'u') throw Stop{};
    pos_ += 2;
    std::uint32_t low = hex4();
    if (low < 0xDC00 || low > 0xDFFF) throw Stop{};
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
  }
  append_utf8(scratch_, cp);
}

JsonCursor::Number JsonCursor::number() {
  skip_space();
  const char* p = text_.data();
  const std::size_t n = text_.size();
  const std::size_t start = pos_;
  Number out;
  bool negative = pos_ < n && p[pos_] == '-';
  if (negative) ++pos_;
  if (pos_ >= n || !is_digit(p[pos_])) throw Stop{};
  if (p[pos_] == '0') {
    ++pos_;
  } else {
    while (pos_ < n && is_digit(p[pos_])) ++pos_;
  }
  bool floating = false;
  if (pos_ < n && p[pos_] == '.') {
    floating = true;
    ++pos_;
    if (pos_ >= n || !is_digit(p[pos_])) throw Stop{};
    while (pos_ < n && is_digit(p[pos_])) ++pos_;
  }
  if (pos_ < n && (p[pos_] == 'e' || p[pos_] == 'E')) {
    floating = true;
    ++pos_;
    if (pos_ < n && (p[pos_] == '+' || p[pos_] == '-')) ++pos_;
    if (pos_ >= n || !is_digit(p[pos_])) throw Stop{};
    while (pos_ < n && is_digit(p[pos_])) ++pos_;
  }
  const char* first = p + start;
  const char* last = p + pos_;
  std::from_chars_result r{};
  if (floating) {
    out.type = Number::Type::floating;
    r = std::from_chars(first, last, out.d);
    if (r.ec == std::errc() && !std::isfinite(out.d)) throw Stop{};
  } else if (negative) {
    out.type = Number::Type::integer;
    r = std::from_chars(first, last, out.i);
  } else {
    out.type = Number::Type::unsigned_int;
    r = std::from_chars(first, last, out.u);
  }
  if (r.ec != std::errc() || r.ptr != last) throw Stop{};
  return out;
}

std::int64_t JsonCursor::integer(std::int64_t lo, std::int64_t hi) {
  const Number n = number();
  std::int64_t x = n.i;
  if (n.type == Number::Type::floating) throw Stop{};
  if (n.type == Number::Type::unsigned_int) {
    if (n.u > static_cast<std::uint64_t>(hi)) throw Stop{};
    x = static_cast<std::int64_t>(n.u);
  }
  if (x < lo || x > hi) throw Stop{};
  return x;
}

std::uint64_t JsonCursor::unsigned_int() {
  const Number n = number();
  if (n.type != Number::Type::unsigned_int) throw Stop{};
  return n.u;
}

void JsonCursor::literal(std::string_view word) {
  if (text_.size() - pos_ < word.size() || text_.compare(pos_, word.size(), word) != 0)
    throw Stop{};
  pos_ += word.size();
}

bool JsonCursor::boolean() {
  if (next_byte() == 't') {
    literal("true");
    return true;
  }
  literal("false");
  return false;
}

void JsonCursor::null() {
  skip_space();
  literal("null");
}

void JsonCursor::skip() {
  std::string_view key;
  switch (peek()) {
    case Kind::object:
      begin_object();
      while (next_member(key)) skip();
      return;
    case Kind::array:
      begin_array();
      while (next_element()) skip();
      return;
    case Kind::string:
      string();
      return;
    case Kind::number:
      number();
      return;
    case Kind::boolean:
      boolean();
      return;
    case Kind::null:
      null();
      return;
  }
}

void JsonCursor::finish() {
  skip_space();
  if (pos_ != text_.size()) throw Stop{};
}

}  // namespace hangscan
