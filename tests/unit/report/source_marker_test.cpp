// The running expression under a Python frame's source line, as CPython 3.11+ tracebacks mark it.
#include <gtest/gtest.h>

#include "report/source_marker.h"

namespace hangscan {
namespace {

Frame at(const std::string& source, int col, int end_col, int line = 7, int end_line = 7) {
  Frame f;
  f.kind = FrameKind::python;
  f.line = line;
  f.end_line = end_line;
  f.column = col;
  f.end_column = end_col;
  f.source = source;
  return f;
}

TEST(SourceMarker, MarksThePartUnderTheStrippedLine) {
  //                      0123456789012345678901234567890123456789012345
  std::string src = "    total = compute(1) + block_in(NEVER) + compute(2)";
  auto lines = source_marker(at(src, 25, 40));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "total = compute(1) + block_in(NEVER) + compute(2)");
  EXPECT_EQ(lines[1], "                     ^^^^^^^^^^^^^^^");
}

TEST(SourceMarker, WholeLineGetsNoMarker) {
  EXPECT_EQ(source_marker(at("    lock.acquire()", 4, 18)),
            std::vector<std::string>{"lock.acquire()"});
}

TEST(SourceMarker, LaterEndLineMarksToTheEndOfThisLine) {
  auto lines = source_marker(at("    x = f(a,", 8, 3, 7, 8));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "    ^^^^");
}

TEST(SourceMarker, ColumnsAreBytesShownAsCharacters) {
  // 'é' is 2 bytes: byte column 12 is character 11.
  auto lines = source_marker(at("    s = 'é' + g(x)", 15, 19));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "          ^^^^");
}

// The source is the target's file: shown escaped, the marker under what is shown.
TEST(SourceMarker, ControlBytesAreShownEscapedAndMarkedWhereShown) {
  auto lines = source_marker(at("    x = '\t\x1b' + g(y)", 15, 19));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "x = '\\t\\x1b' + g(y)");
  EXPECT_EQ(lines[1], "               ^^^^");
}

TEST(SourceMarker, NothingWithoutSourceOrColumns) {
  Frame f = at("x", 0, 1);
  f.source.reset();
  EXPECT_TRUE(source_marker(f).empty());
  Frame g = at("    y = 1", 0, 0);
  g.column.reset();
  EXPECT_TRUE(source_marker(g).empty());
  EXPECT_EQ(source_marker(at("    y = 1", 40, 50)), std::vector<std::string>{"y = 1"});
}

}  // namespace
}  // namespace hangscan
