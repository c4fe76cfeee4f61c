#include "util/parse_number.h"

#include <cmath>

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

}  // namespace hangscan
