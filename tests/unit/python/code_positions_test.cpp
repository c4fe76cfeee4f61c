// Line-table decoders for each CPython format, including malformed tables.
#include <gtest/gtest.h>

#include <string>

#include "python/code_positions.h"

namespace hangscan::python {
namespace {

std::string bytes(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s.push_back(static_cast<char>(b));
  return s;
}

TEST(LnoTab, AddressDeltasThenLineDeltas) {
  // Line 10 starts at byte 0 +1 -> 11; byte 6 -> 12; byte 14 -> 14; byte 20 -> 13 (negative).
  std::string t = bytes({0, 1, 6, 1, 8, 2, 6, -1});
  EXPECT_EQ(lnotab_line(t, 10, 0), 11);
  EXPECT_EQ(lnotab_line(t, 10, 5), 11);
  EXPECT_EQ(lnotab_line(t, 10, 6), 12);
  EXPECT_EQ(lnotab_line(t, 10, 13), 12);
  EXPECT_EQ(lnotab_line(t, 10, 14), 14);
  EXPECT_EQ(lnotab_line(t, 10, 20), 13);
  EXPECT_EQ(lnotab_line(t, 10, 1000), 13);
  // Big jumps are split into several entries of (255, 0) or (0, 127).
  std::string jump = bytes({0, 127, 0, 73, 255, 0, 1, 1});
  EXPECT_EQ(lnotab_line(jump, 1, 10), 201);
  EXPECT_EQ(lnotab_line(jump, 1, 256), 202);
  EXPECT_EQ(lnotab_line({}, 7, 4), 7);
  // An odd trailing byte is ignored.
  EXPECT_EQ(lnotab_line(bytes({0, 1, 4}), 7, 9), 8);
}

TEST(LineTable310, RangesWithNoLineMarker) {
  // [0,4) line 11; [4,10) no line; [10,14) line 13 (11 + 2, the -128 entry does not move it).
  std::string t = bytes({4, 1, 6, -128, 4, 2});
  EXPECT_EQ(linetable310_line(t, 10, 0), 11);
  EXPECT_EQ(linetable310_line(t, 10, 3), 11);
  EXPECT_EQ(linetable310_line(t, 10, 4), std::nullopt);
  EXPECT_EQ(linetable310_line(t, 10, 9), std::nullopt);
  EXPECT_EQ(linetable310_line(t, 10, 10), 13);
  EXPECT_EQ(linetable310_line(t, 10, 14), std::nullopt);  // past the end
  EXPECT_EQ(linetable310_line(bytes({6, -3}), 10, 2), 7);
}

TEST(LocationTable311, EveryEntryForm) {
  std::string t;
  t += bytes({0x80 | (0 << 3) | 1, 5});                 // short form: 2 units, line 10
  t += bytes({0x80 | (11 << 3) | 0, 4, 9});             // one-line form: +1 -> 11
  t += bytes({0x80 | (13 << 3) | 2, (2 << 1) | 1});     // no column: -2 -> 9, 3 units
  t += bytes({0x80 | (14 << 3) | 0, 3 << 1, 0, 1, 5});  // long form: +3 -> 12
  t += bytes({0x80 | (15 << 3) | 1});                   // no location: 2 units
  t += bytes({0x80 | (13 << 3) | 0, 64 | 16, 1});       // varint +40 -> 52
  EXPECT_EQ(location_table_line(t, 10, 0), 10);
  EXPECT_EQ(location_table_line(t, 10, 2), 10);  // unit 1
  EXPECT_EQ(location_table_line(t, 10, 4), 11);  // unit 2
  EXPECT_EQ(location_table_line(t, 10, 6), 9);   // units 3-5
  EXPECT_EQ(location_table_line(t, 10, 10), 9);
  EXPECT_EQ(location_table_line(t, 10, 12), 12);            // unit 6
  EXPECT_EQ(location_table_line(t, 10, 14), std::nullopt);  // units 7-8: no location
  EXPECT_EQ(location_table_line(t, 10, 18), 52);            // unit 9
  EXPECT_EQ(location_table_line(t, 10, 20), std::nullopt);  // past the end
}

TEST(LocationTable311, MalformedTablesNeverReadPastTheEnd) {
  // Truncated long form, a byte that is not an entry start, a varint that never ends.
  EXPECT_EQ(location_table_line(bytes({0x80 | (14 << 3), 6}), 1, 0), std::nullopt);
  EXPECT_EQ(location_table_line(bytes({0x05, 0x05}), 1, 0), std::nullopt);
  std::string endless = bytes({0x80 | (13 << 3)});
  endless += std::string(64, static_cast<char>(0x7f));
  EXPECT_EQ(location_table_line(endless, 1, 200), std::nullopt);
}

TEST(AddrToLine, DispatchesOnFormat) {
  std::string lnotab = bytes({0, 1, 6, 1});
  EXPECT_EQ(addr_to_line(LineTable::lnotab, lnotab, 10, 6), 12);
  EXPECT_EQ(addr_to_line(LineTable::linetable310, bytes({6, 1, 8, 1}), 10, 6), 12);
  EXPECT_EQ(addr_to_line(LineTable::location311, bytes({0x80 | (13 << 3) | 7, 2}), 10, 6), 11);
}

TEST(LocationTable, PositionsEqualCPythonsOwnCoPositions) {
  // co_linetable of a function compiled by CPython 3.11.2 (first line 1):
  //   total = compute(1) + block_in(NEVER) + compute(
  //       2)
  //   return 'h\u00e9' + x
  // Expected values are that interpreter's own code.co_positions() at each byte offset.
  std::string t =
      bytes({128, 0,   221, 12, 19,  144, 65,  137, 74,  140, 74, 157, 24, 165, 37,  153, 31, 156,
             31,  209, 12,  40, 173, 55,  216, 8,   9,   241, 3,  1,   44, 11,  244, 0,   1,  44,
             11,  241, 0,   1,  13,  11,  128, 69,  224, 11,  16, 149, 49, 137, 57,  208, 4,  20});
  struct Want {
    std::uint64_t offset;
    int line, end_line, column, end_column;
  };
  for (const Want& w : {Want{0, 1, 1, 0, 0}, Want{2, 2, 2, 12, 19}, Want{14, 2, 2, 20, 21},
                        Want{30, 2, 2, 25, 33}, Want{42, 2, 2, 34, 39}, Want{68, 2, 2, 12, 40},
                        Want{84, 3, 3, 8, 9}, Want{86, 2, 3, 43, 10}, Want{104, 2, 2, 4, 9},
                        Want{106, 4, 4, 11, 16}, Want{124, 4, 4, 4, 20}}) {
    auto p = location_table_position(t, 1, w.offset);
    ASSERT_TRUE(p) << w.offset;
    EXPECT_EQ(p->line, w.line) << w.offset;
    EXPECT_EQ(p->end_line, w.end_line) << w.offset;
    EXPECT_EQ(p->column, w.column) << w.offset;
    EXPECT_EQ(p->end_column, w.end_column) << w.offset;
    EXPECT_EQ(location_table_line(t, 1, w.offset), w.line);
  }
  EXPECT_FALSE(location_table_position(t, 1, 126));            // past the end
  EXPECT_FALSE(location_table_position(bytes({0x10}), 1, 0));  // not an entry start
}

}  // namespace
}  // namespace hangscan::python
