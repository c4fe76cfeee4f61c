// Python-style renderings: float, str, bytes and big-int formatting against what CPython's
// repr() prints for the same values (expected strings copied from python3.11 output).
#include <gtest/gtest.h>

#include <string>

#include "python/objects.h"
#include "python/value_repr.h"

namespace hangscan::python {
namespace {

TEST(FloatRepr, ShortestDigitsAndPythonsExponentRule) {
  EXPECT_EQ(float_repr(0.1), "0.1");
  EXPECT_EQ(float_repr(1.5), "1.5");
  EXPECT_EQ(float_repr(2.0), "2.0");
  EXPECT_EQ(float_repr(-0.0), "-0.0");
  EXPECT_EQ(float_repr(1e16), "1e+16");
  EXPECT_EQ(float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(float_repr(123456789.125), "123456789.125");
  EXPECT_EQ(float_repr(0.0001), "0.0001");
  EXPECT_EQ(float_repr(0.00001), "1e-05");
  EXPECT_EQ(float_repr(1.5e-300), "1.5e-300");
  EXPECT_EQ(float_repr(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(float_repr(1e300 * 1e10), "inf");
}

TEST(StrRepr, QuotesAndEscapesLikePython) {
  EXPECT_EQ(str_repr("plain", false), "'plain'");
  EXPECT_EQ(str_repr("it's", false), "\"it's\"");
  EXPECT_EQ(str_repr("both ' and \"", false), "'both \\' and \"'");
  EXPECT_EQ(str_repr("tab\tnl\nback\\", false), "'tab\\tnl\\nback\\\\'");
  EXPECT_EQ(str_repr(std::string("\x01\x7f", 2), false), "'\\x01\\x7f'");
  EXPECT_EQ(str_repr("h\xc3\xa9llo \xe2\x9c\x93", false), "'h\xc3\xa9llo \xe2\x9c\x93'");
  EXPECT_EQ(str_repr("nb\xc2\xa0sp", false), "'nb\\xa0sp'");
  EXPECT_EQ(str_repr("cut", true), "'cut...'");
  EXPECT_EQ(bytes_repr(std::string("\x00"
                                   "ab\xff'",
                                   5),
                       false),
            "b\"\\x00ab\\xff'\"");
  EXPECT_EQ(bytes_repr("xyz", false), "b'xyz'");
}

TEST(LongToDecimal, BigAndBoundedValues) {
  LongValue v;
  v.ndigits = 3;
  v.digits = {0, 0, 16};  // 16 * 2**60 = 2**64
  v.negative = true;
  EXPECT_EQ(long_to_decimal(v, 100), "-18446744073709551616");
  LongValue zero;
  EXPECT_EQ(long_to_decimal(zero, 10), "0");
  LongValue big;  // 2**(30*40) - 1: 362 decimal digits
  big.ndigits = 40;
  big.digits.assign(40, (1u << 30) - 1);
  auto s = long_to_decimal(big, 1000);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->size(), 362u);
  EXPECT_EQ(s->substr(0, 10), "1721847945");
  EXPECT_FALSE(long_to_decimal(big, 100));  // longer than asked: refused, not cut
  LongValue torn;                           // says 5 digits, only 2 read
  torn.ndigits = 5;
  torn.digits = {1, 2};
  EXPECT_FALSE(long_to_decimal(torn, 100));
}

}  // namespace
}  // namespace hangscan::python

namespace hangscan::python {
namespace {

TEST(FloatRepr, Float32UsesItsOwnShortestDigits) {
  EXPECT_EQ(float32_repr(0.1f), "0.1");  // as a double it is 0.10000000149011612
  EXPECT_EQ(float_repr(static_cast<double>(0.1f)), "0.10000000149011612");
  EXPECT_EQ(float32_repr(1e20f), "1e+20");
  EXPECT_EQ(float32_repr(-2.5f), "-2.5");
  EXPECT_EQ(float32_repr(3.0f), "3.0");
  EXPECT_EQ(float32_repr(1e-5f), "1e-05");
}

}  // namespace
}  // namespace hangscan::python

namespace hangscan::python {
namespace {

TEST(TorchLayout, RowsOnlyForGeneratedReleases) {
  const TorchLayout* row = torch_layout("1.13.0a0");  // Debian 12's python3-torch
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->maybe_owned_impl, 8);
  EXPECT_EQ(row->max_inline, 5);
  ASSERT_EQ(row->dtypes.count(6), 1u);
  EXPECT_STREQ(row->dtypes.at(6).dtype, "float32");
  EXPECT_EQ(row->dtypes.at(6).size, 4u);
  EXPECT_EQ(row->dtypes.at(11).kind, ElementKind::boolean);
  EXPECT_EQ(torch_layout("2.5.1"), nullptr);  // another release: tensors are not read
  EXPECT_EQ(torch_layout(""), nullptr);
}

}  // namespace
}  // namespace hangscan::python
