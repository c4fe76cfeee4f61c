#include "group/rank_set.h"

#include <gtest/gtest.h>

namespace hangscan {
namespace {

TEST(RankSet, RendersCompressedRanges) {
  EXPECT_EQ(RankSet({0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15}).to_string(), "0-6,8-15");
  EXPECT_EQ(RankSet({3}).to_string(), "3");
  EXPECT_EQ(RankSet().to_string(), "");
  EXPECT_EQ(RankSet({5, 1, 3}).to_string(), "1,3,5");
  EXPECT_EQ(RankSet({1, 0, 1, 0}).to_string(), "0-1");
  EXPECT_EQ(RankSet({0, 1, 3}).to_string(), "0-1,3");
}

TEST(RankSet, InsertKeepsOrderAndUniqueness) {
  RankSet s;
  s.insert(4);
  s.insert(2);
  s.insert(3);
  s.insert(3);
  s.insert(9);
  EXPECT_EQ(s.values(), (std::vector<int>{2, 3, 4, 9}));
  EXPECT_TRUE(s.contains(3));
  EXPECT_FALSE(s.contains(5));
  RankSet t({5, 6, 1});
  s.insert_all(t);
  EXPECT_EQ(s.to_string(), "1-6,9");
}

TEST(RankSet, ParsesWhatItRenders) {
  auto r = RankSet::parse("0-6,8-15");
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(r->size(), 15u);
  EXPECT_EQ(r->to_string(), "0-6,8-15");
  auto spaced = RankSet::parse(" 0-2 , 5,7 ");
  ASSERT_TRUE(spaced.ok());
  EXPECT_EQ(spaced->values(), (std::vector<int>{0, 1, 2, 5, 7}));
  auto empty = RankSet::parse("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(RankSet, RejectsGarbage) {
  for (const char* bad : {"5-3", "a", "1-", "1,,2", "1-2-3", "0x3", "-"}) {
    auto r = RankSet::parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, Errc::usage) << bad;
  }
  EXPECT_EQ(RankSet::parse("5-3").error().message, "rank list \"5-3\": range \"5-3\" is reversed");
  auto huge = RankSet::parse("0-2147483647", 1000);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error().message, "rank list \"0-2147483647\" has more than 1000 ranks");
}

}  // namespace
}  // namespace hangscan
