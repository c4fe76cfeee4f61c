// The regex wrapper: std::regex's own semantics (ECMAScript or POSIX extended, case folding),
// groups as strings, and a bad user pattern as a usage error rather than an exception.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/pattern.h"

namespace hangscan {
namespace {

using Groups = std::vector<std::string>;

TEST(Pattern, SearchFindsAMatchAnywhereAndMatchesNeedsAllOfIt) {
  Pattern p("ab+c");
  EXPECT_TRUE(p.search("xxabbbcyy"));
  EXPECT_FALSE(p.matches("xxabbbcyy"));
  EXPECT_TRUE(p.matches("abbc"));
  EXPECT_FALSE(p.search("ac"));
}

TEST(Pattern, GroupsAreTheWholeMatchThenEachGroupWithUnmatchedOnesEmpty) {
  Pattern p(R"((\d+)\.(\d+)(rc)?)");
  EXPECT_EQ(p.search_groups("python3.11 x"), (Groups{"3.11", "3", "11", ""}));
  EXPECT_EQ(p.match_groups("3.11rc"), (Groups{"3.11rc", "3", "11", "rc"}));
  EXPECT_EQ(p.match_groups("v3.11"), std::nullopt);
  EXPECT_EQ(p.search_groups("no digits"), std::nullopt);
}

TEST(Pattern, CaseFoldingAndPosixExtendedSyntax) {
  Pattern icase("rank([0-9]+)", {Pattern::Syntax::ecmascript, true});
  EXPECT_EQ(icase.search_groups("core.RANK12.x"), (Groups{"RANK12", "12"}));
  // POSIX extended, as pgrep -f reads a pattern: no ECMAScript-only groups like (?:...).
  Pattern ere("[[:digit:]]+", {Pattern::Syntax::posix_extended});
  EXPECT_EQ(ere.search_groups("pid 4725"), (Groups{"4725"}));
  EXPECT_FALSE(Pattern::compile("(?:a)", {Pattern::Syntax::posix_extended}));
  EXPECT_TRUE(Pattern::compile("(?:a)"));
}

TEST(Pattern, ABadUserPatternIsAUsageErrorWithTheLibrarysReason) {
  auto bad = Pattern::compile("a(b");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::usage);
  EXPECT_FALSE(bad.error().message.empty());
  auto good = Pattern::compile("a(b)");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->search_groups("xaby"), (Groups{"ab", "b"}));
}

TEST(Pattern, AUserPatternLongerThanTheLimitIsRefusedUncompiled) {
  // 100,000 characters overflowed std::regex's recursive compiler (SIGSEGV) before the limit.
  auto long_one = Pattern::compile(std::string(100000, 'a'));
  ASSERT_FALSE(long_one);
  EXPECT_EQ(long_one.error().code, Errc::usage);
  EXPECT_EQ(long_one.error().message,
            "the pattern is 100000 characters long; at most 1024 are accepted");
  EXPECT_TRUE(Pattern::compile(std::string(kMaxPatternLength, 'a')));
}

TEST(Pattern, CopiesShareOneCompiledPattern) {
  Pattern a("x+");
  Pattern b = a;
  EXPECT_TRUE(b.matches("xxx"));
  EXPECT_TRUE(a.matches("x"));
}

}  // namespace
}  // namespace hangscan
