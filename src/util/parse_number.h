// Bounded number parsing for everything that comes from outside: /proc files, cores,
// executable names, environments, agent JSON, command-line flags.
//
// Why one helper: std::stoi and friends throw on "99999999999" or "abc" (one odd executable
// name, `python3.99999999999`, once ended a whole run with "hangscan: stoi"), and atoi/strtoul
// silently turn garbage or overflow into 0 or ULONG_MAX. These never throw and never wrap:
// the text is a number of the requested type, in range, with nothing left over, or nullopt.
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>

namespace hangscan {

// The bounds of a number field read from a document or a file (an int, a 64-bit integer): one
// name for what the readers check against.
inline constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
inline constexpr std::int64_t kIntMin = std::numeric_limits<int>::min();
inline constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// `s` without spaces, tabs and line ends at either end: the trimming every parser of outside
// text uses ("123\n" from a /proc file is 123; a Slurm or kernel log field loses its padding).
std::string_view trim_space(std::string_view s);

// The whole of `text` (trimmed) as an integer of type T in base `base`; nullopt for an empty
// text, a sign on an unsigned type, trailing characters, or a value outside T. No "0x"
// prefix is accepted: strip it and pass base 16.
template <class T>
std::optional<T> parse_int(std::string_view text, int base = 10) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  text = trim_space(text);
  if (text.empty() || text.front() == '+') return std::nullopt;
  T out{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out, base);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return out;
}

// parse_int, then lo <= value <= hi.
template <class T>
std::optional<T> parse_int_in(std::string_view text, T lo, T hi, int base = 10) {
  auto v = parse_int<T>(text, base);
  if (!v || *v < lo || *v > hi) return std::nullopt;
  return v;
}

// Reads an integer from the front of `text` and removes it; nullopt (text untouched) when the
// front is not a number of type T.
template <class T>
std::optional<T> take_int(std::string_view& text, int base = 10) {
  T out{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out, base);
  if (ec != std::errc() || ptr == text.data()) return std::nullopt;
  text.remove_prefix(static_cast<std::size_t>(ptr - text.data()));
  return out;
}

// The whole of `text` (trimmed) as a finite double ("nan", "inf", "1e999" are nullopt).
std::optional<double> parse_finite_double(std::string_view text);

// A size in bytes: "2048K", "256M", "1G", "1.5G", "2GiB", "4096". nullopt for anything else.
// Why here: --gcore-max-size and the agent's copy of it are numbers from outside too.
std::optional<std::uint64_t> parse_size(std::string_view text);

}  // namespace hangscan
