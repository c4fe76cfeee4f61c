#include "util/parse_number.h"

#include <cctype>
#include <cmath>
#include <string>

namespace hangscan {

std::string_view trim_space(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::optional<double> parse_finite_double(std::string_view text) {
  text = trim_space(text);
  if (text.empty() || text.front() == '+') return std::nullopt;
  double out = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out, std::chars_format::general);
  if (ec != std::errc() || ptr != end || !std::isfinite(out)) return std::nullopt;
  return out;
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::string s(text);
  std::uint64_t mult = 1;
  char last = static_cast<char>(std::toupper(static_cast<unsigned char>(s.back())));
  if (last == 'B' && s.size() > 1) {  // "256MB" / "256MiB"
    s.pop_back();
    if (s.size() > 1 && (s.back() == 'i' || s.back() == 'I')) s.pop_back();
    last = static_cast<char>(std::toupper(static_cast<unsigned char>(s.back())));
  }
  if (last == 'K' || last == 'M' || last == 'G' || last == 'T') {
    mult = last == 'K'   ? 1ull << 10
           : last == 'M' ? 1ull << 20
           : last == 'G' ? 1ull << 30
                         : 1ull << 40;
    s.pop_back();
  }
  if (s.empty()) return std::nullopt;
  auto v = parse_finite_double(s);
  if (!v || *v < 0 || *v * static_cast<double>(mult) > 1e19) return std::nullopt;
  return static_cast<std::uint64_t>(std::llround(*v * static_cast<double>(mult)));
}

}  // namespace hangscan
