// The one file that instantiates std::regex (see pattern.h for why).
#include "util/pattern.h"

#include <regex>

namespace hangscan {

struct Pattern::Compiled {
  std::regex re;
};

namespace {

std::regex::flag_type regex_flags(Pattern::Flags flags) {
  std::regex::flag_type f = flags.syntax == Pattern::Syntax::posix_extended
                                ? std::regex::extended
                                : std::regex::ECMAScript;
  if (flags.icase) f |= std::regex::icase;
  return f;
}

std::vector<std::string> groups_of(const std::match_results<std::string_view::const_iterator>& m) {
  std::vector<std::string> out;
  out.reserve(m.size());
  for (const auto& sub : m) out.push_back(sub.matched ? sub.str() : std::string());
  return out;
}

}  // namespace

Pattern::Pattern(std::string_view pattern, Flags flags)
    : compiled_(std::make_shared<const Compiled>(
          Compiled{std::regex(pattern.begin(), pattern.end(), regex_flags(flags))})) {}

Result<Pattern> Pattern::compile(std::string_view pattern, Flags flags) {
  if (pattern.size() > kMaxPatternLength) {
    return Error(Errc::usage, "the pattern is " + std::to_string(pattern.size()) +
                                  " characters long; at most " + std::to_string(kMaxPatternLength) +
                                  " are accepted");
  }
  try {
    return Pattern(pattern, flags);
  } catch (const std::regex_error& e) {
    return Error(Errc::usage, e.what());
  }
}

bool Pattern::search(std::string_view text) const {
  return std::regex_search(text.begin(), text.end(), compiled_->re);
}

bool Pattern::matches(std::string_view text) const {
  return std::regex_match(text.begin(), text.end(), compiled_->re);
}

std::optional<std::vector<std::string>> Pattern::search_groups(std::string_view text) const {
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(text.begin(), text.end(), m, compiled_->re)) return std::nullopt;
  return groups_of(m);
}

std::optional<std::vector<std::string>> Pattern::match_groups(std::string_view text) const {
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_match(text.begin(), text.end(), m, compiled_->re)) return std::nullopt;
  return groups_of(m);
}

}  // namespace hangscan
