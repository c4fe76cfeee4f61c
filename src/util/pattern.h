// A compiled regular expression whose <regex> instantiation lives in one file.
//
// Why: std::regex is the most expensive template in the build. Every file that included <regex>
// (directly or through a header) paid for parsing it, and every file that searched with it paid
// seconds of optimisation for its own copy of the matcher: on a new 2-core machine that was a
// visible part of `make demo`. Callers see this small class instead; the semantics are
// std::regex's own (ECMAScript by default, POSIX extended on request).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hangscan/result.h"

namespace hangscan {

enum class PatternSyntax { ecmascript, posix_extended };
struct PatternFlags {
  PatternSyntax syntax = PatternSyntax::ecmascript;
  bool icase = false;
};

// The longest pattern a user may give: std::regex compiles (and matches) by recursion, and a
// pattern of 100,000 characters overflowed the stack (SIGSEGV) before this limit.
inline constexpr std::size_t kMaxPatternLength = 1024;

class Pattern {
 public:
  using Syntax = PatternSyntax;
  using Flags = PatternFlags;

  // A pattern written in the code: a bad one is a programming error (std::regex_error).
  explicit Pattern(std::string_view pattern, Flags flags = {});
  // A pattern from the user: a bad one is Errc::usage whose message is the library's reason;
  // one longer than kMaxPatternLength is refused before it is compiled.
  static Result<Pattern> compile(std::string_view pattern, Flags flags = {});

  // True when the pattern matches somewhere in `text` / matches all of `text`.
  bool search(std::string_view text) const;
  bool matches(std::string_view text) const;
  // The whole match and its groups (index 0 is the whole match; an unmatched group is ""), of
  // the first match in `text` / of a match of all of `text`; nullopt when there is none.
  std::optional<std::vector<std::string>> search_groups(std::string_view text) const;
  std::optional<std::vector<std::string>> match_groups(std::string_view text) const;

 private:
  struct Compiled;
  std::shared_ptr<const Compiled> compiled_;  // immutable once built: copies share it
};

}  // namespace hangscan
