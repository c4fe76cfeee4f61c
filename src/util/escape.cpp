// Target-controlled text made safe for terminals and text files (see escape.h for the rule).
#include "util/escape.h"

#include <cstdint>

namespace hangscan {

namespace {

constexpr char kHex[] = "0123456789abcdef";

// One unit of the input: a byte or a UTF-8 sequence, and how it is written.
struct Unit {
  std::size_t size = 1;
  enum class Kind { plain, byte, code_point } kind = Kind::plain;
  std::uint32_t value = 0;  // the byte (Kind::byte) or the code point (Kind::code_point)
};

// Code points shown as \uXXXX: C1 controls, line separators, direction controls.
bool hidden_code_point(std::uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
         (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

// Length and code point of a valid UTF-8 sequence starting at s[i]; 0 when invalid.
std::size_t utf8_sequence(std::string_view s, std::size_t i, std::uint32_t& cp) {
  auto lead = static_cast<unsigned char>(s[i]);
  std::size_t n = lead >= 0xf0 && lead <= 0xf4 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc2 ? 2 : 0;
  if (n == 0 || lead > 0xf4 || i + n > s.size()) return 0;
  cp = lead & (0x7f >> n);
  for (std::size_t k = 1; k < n; ++k) {
    auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3f);
  }
  static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

Unit unit_at(std::string_view s, std::size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x20 || c == 0x7f) return {1, Unit::Kind::byte, c};
  if (c < 0x80) return {};
  std::uint32_t cp = 0;
  std::size_t n = utf8_sequence(s, i, cp);
  if (n == 0) return {1, Unit::Kind::byte, c};
  if (hidden_code_point(cp)) return {n, Unit::Kind::code_point, cp};
  return {n, Unit::Kind::plain, 0};
}

// Whether a backslash followed by s[i] must be doubled to stay unambiguous.
bool backslash_needs_doubling(std::string_view s, std::size_t i) {
  if (i >= s.size()) return false;
  char c = s[i];
  if (c == '\\' || c == 'x' || c == 'u' || c == 'n' || c == 'r' || c == 't') return true;
  return unit_at(s, i).kind != Unit::Kind::plain;
}

void append_unit(std::string& out, const Unit& u) {
  if (u.kind == Unit::Kind::byte) {
    if (u.value == '\n') out += "\\n";
    else if (u.value == '\r') out += "\\r";
    else if (u.value == '\t') out += "\\t";
    else out += {'\\', 'x', kHex[u.value >> 4], kHex[u.value & 0xf]};
    return;
  }
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(u.value >> shift) & 0xf];
}

}  // namespace

bool is_plain_text(std::string_view s) {
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f || c == '\\') return false;  // the slow path decides
  }
  return true;
}

void append_escaped(std::string& out, std::string_view s, Backslashes backslashes) {
  if (is_plain_text(s)) {
    out += s;
    return;
  }
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '\\') {
      bool doubled =
          backslashes == Backslashes::doubled_when_ambiguous && backslash_needs_doubling(s, i + 1);
      out += doubled ? "\\\\" : "\\";
      ++i;
      continue;
    }
    Unit u = unit_at(s, i);
    if (u.kind == Unit::Kind::plain) out.append(s.substr(i, u.size));
    else append_unit(out, u);
    i += u.size;
  }
}

std::string escape_for_text(std::string_view s, Backslashes backslashes) {
  if (is_plain_text(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  append_escaped(out, s, backslashes);
  return out;
}

}  // namespace hangscan
