// The bounded number parser: every malformed, signed-where-unsigned or out-of-range text is
// nullopt, never an exception or a wrapped value.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "util/parse_number.h"

namespace hangscan {
namespace {

TEST(ParseInt, AcceptsWholeNumbersWithSurroundingSpace) {
  EXPECT_EQ(parse_int<int>("42"), 42);
  EXPECT_EQ(parse_int<int>("  -7\n"), -7);
  EXPECT_EQ(parse_int<std::uint64_t>("ffffffffffffffff", 16),
            std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(parse_int<int>("2147483647"), 2147483647);
  EXPECT_EQ(parse_int<int>("-2147483648"), std::numeric_limits<int>::min());
}

TEST(ParseInt, RejectsOverflowGarbageAndSigns) {
  EXPECT_EQ(parse_int<int>("99999999999"), std::nullopt);  // the python3.99999999999 minor
  EXPECT_EQ(parse_int<int>("2147483648"), std::nullopt);
  EXPECT_EQ(parse_int<std::uint64_t>("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parse_int<unsigned>("-1"), std::nullopt);
  EXPECT_EQ(parse_int<int>("+1"), std::nullopt);
  EXPECT_EQ(parse_int<int>(""), std::nullopt);
  EXPECT_EQ(parse_int<int>("   "), std::nullopt);
  EXPECT_EQ(parse_int<int>("12abc"), std::nullopt);
  EXPECT_EQ(parse_int<int>("abc"), std::nullopt);
  EXPECT_EQ(parse_int<int>("1 2"), std::nullopt);
  EXPECT_EQ(parse_int<int>("0x10"), std::nullopt);
  EXPECT_EQ(parse_int<int>(std::string(100000, '9')), std::nullopt);
}

TEST(ParseInt, RangeIsInclusive) {
  EXPECT_EQ(parse_int_in<int>("1", 1, 10), 1);
  EXPECT_EQ(parse_int_in<int>("10", 1, 10), 10);
  EXPECT_EQ(parse_int_in<int>("0", 1, 10), std::nullopt);
  EXPECT_EQ(parse_int_in<int>("11", 1, 10), std::nullopt);
}

TEST(TakeInt, ConsumesOnlyTheNumber) {
  std::string_view s = "12-34";
  EXPECT_EQ(take_int<int>(s), 12);
  EXPECT_EQ(s, "-34");
  EXPECT_EQ(take_int<int>(s), -34);
  EXPECT_EQ(s, "");
  std::string_view bad = "x1";
  EXPECT_EQ(take_int<int>(bad), std::nullopt);
  EXPECT_EQ(bad, "x1");
  std::string_view big = "99999999999,";
  EXPECT_EQ(take_int<int>(big), std::nullopt);
  EXPECT_EQ(big, "99999999999,");
}

TEST(ParseFiniteDouble, OnlyFiniteNumbers) {
  EXPECT_EQ(parse_finite_double("1.5"), 1.5);
  EXPECT_EQ(parse_finite_double(" 30 "), 30.0);
  EXPECT_EQ(parse_finite_double("1e3"), 1000.0);
  EXPECT_EQ(parse_finite_double("-0.25"), -0.25);
  for (const char* bad :
       {"nan", "NaN", "inf", "-inf", "infinity", "1e999", "", "1.5s", "abc", "+1", "0x10"}) {
    EXPECT_EQ(parse_finite_double(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace hangscan
