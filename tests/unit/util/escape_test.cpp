// The visible form of target-controlled text (util/escape.h): exact outputs for every class of
// byte, unchanged ordinary names, and no ambiguity between an escape and a name's own text.
#include <gtest/gtest.h>

#include <string>

#include "util/escape.h"

namespace hangscan {
namespace {

TEST(EscapeForText, OrdinaryNamesPassUnchanged) {
  for (std::string s : {"", "all_reduce", "/usr/lib/python3.11/threading.py", "<module>",
                        "Thread-1 (worker)", "c10d::Work::wait()", "zählen 数据 \xf0\x9f\x98\x80",
                        "C:\\data\\models", "a\\b", "trailing\\"}) {
    EXPECT_EQ(escape_for_text(s), s) << s;
  }
  EXPECT_TRUE(is_plain_text("all_reduce (job.py:11)"));
  EXPECT_FALSE(is_plain_text("zählen"));  // not plain ASCII: checked, still unchanged
}

TEST(EscapeForText, ControlBytesBecomeVisible) {
  EXPECT_EQ(escape_for_text("\x1b]0;TITLE\x07\x1b[2J"), "\\x1b]0;TITLE\\x07\\x1b[2J");
  EXPECT_EQ(escape_for_text("a\nSUSPECT rank 9 is FAKE\n"), "a\\nSUSPECT rank 9 is FAKE\\n");
  EXPECT_EQ(escape_for_text("cr\rtab\t"), "cr\\rtab\\t");
  EXPECT_EQ(escape_for_text(std::string("nul\0del\x7f", 8)), "nul\\x00del\\x7f");
  EXPECT_EQ(escape_for_text("\x01\x1f"), "\\x01\\x1f");
}

TEST(EscapeForText, InvalidUtf8BytesAreShownAsHex) {
  EXPECT_EQ(escape_for_text("a\xff"
                            "b"),
            "a\\xffb");
  EXPECT_EQ(escape_for_text("\x80"), "\\x80");                             // stray continuation
  EXPECT_EQ(escape_for_text("\xc3"), "\\xc3");                             // truncated sequence
  EXPECT_EQ(escape_for_text("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(escape_for_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(escape_for_text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(escape_for_text("\xe2\x82z"), "\\xe2\\x82z");
}

TEST(EscapeForText, InvisibleCodePointsAreShownAsCodePoints) {
  EXPECT_EQ(escape_for_text("\xc2\x9b"
                            "2J"),
            "\\u009b2J");                                               // C1 CSI
  EXPECT_EQ(escape_for_text("x\xe2\x80\xa8y"), "x\\u2028y");            // line separator
  EXPECT_EQ(escape_for_text("\xe2\x80\xaegnp.exe"), "\\u202egnp.exe");  // right-to-left override
  EXPECT_EQ(escape_for_text("\xe2\x81\xa6"), "\\u2066");
}

TEST(EscapeForText, BackslashIsDoubledOnlyWhereItWouldReadAsAnEscape) {
  EXPECT_EQ(escape_for_text("\\x1b"), "\\\\x1b");  // the text \x1b, not an ESC
  EXPECT_EQ(escape_for_text("\\n"), "\\\\n");
  EXPECT_EQ(escape_for_text("\\\\"), "\\\\\\");       // the last one ends the text
  EXPECT_EQ(escape_for_text("\\\x1b"), "\\\\\\x1b");  // a backslash before an escaped byte
  EXPECT_EQ(escape_for_text("\\\xc2\x85"), "\\\\\\u0085");
  EXPECT_EQ(escape_for_text("a\\b\\"), "a\\b\\");
}

TEST(EscapeForText, ReprBackslashesCanBeKept) {
  EXPECT_EQ(escape_for_text("'a\\nb\\x1b'", Backslashes::kept), "'a\\nb\\x1b'");
  EXPECT_EQ(escape_for_text("'\xc2\x9b\\\xff'", Backslashes::kept), "'\\u009b\\\\xff'");
}

TEST(EscapeForText, AppendEscapedAppends) {
  std::string out = "name: ";
  append_escaped(out, "t\x1b");
  append_escaped(out, " ok");
  EXPECT_EQ(out, "name: t\\x1b ok");
}

}  // namespace
}  // namespace hangscan
