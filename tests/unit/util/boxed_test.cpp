// Boxed<T>: reads and writes like std::optional<T>, copies deeply, costs a pointer.
#include "hangscan/boxed.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "hangscan/model.h"

namespace hangscan {
namespace {

TEST(Boxed, BehavesLikeAnOptional) {
  Boxed<Death> d;
  EXPECT_FALSE(d.has_value());
  EXPECT_FALSE(d);
  EXPECT_TRUE(d == std::nullopt);
  EXPECT_THROW((void)d.value(), std::bad_optional_access);

  Death killed;
  killed.how = "killed";
  killed.signal = 9;
  d = killed;
  ASSERT_TRUE(d);
  EXPECT_EQ(d->how, "killed");
  EXPECT_EQ((*d).signal, 9);
  EXPECT_EQ(d.value().signal, 9);
  EXPECT_FALSE(d == std::nullopt);

  d.reset();
  EXPECT_FALSE(d);
  d.emplace().how = "exited";
  EXPECT_EQ(d->how, "exited");
  d = std::nullopt;
  EXPECT_FALSE(d);
}

TEST(Boxed, FromOptionals) {
  std::optional<MemoryUsage> none;
  Boxed<MemoryUsage> a = none;
  EXPECT_FALSE(a);
  MemoryUsage m;
  m.rss_bytes = 4096;
  Boxed<MemoryUsage> b = std::optional<MemoryUsage>(m);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->rss_bytes, 4096u);
  EXPECT_EQ(b.to_optional(), std::optional<MemoryUsage>(m));
  EXPECT_EQ(a.to_optional(), std::nullopt);
}

TEST(Boxed, CopiesAreDeepAndCompareByValue) {
  Death first;
  first.how = "oom-kill";
  Boxed<Death> a = first;
  Boxed<Death> b = a;  // a copy of its own
  EXPECT_TRUE(a == b);
  b->how = "segfault";
  EXPECT_EQ(a->how, "oom-kill");
  EXPECT_FALSE(a == b);
  Boxed<Death> empty;
  EXPECT_FALSE(a == empty);
  EXPECT_TRUE(empty == Boxed<Death>());
  b = a;
  EXPECT_TRUE(a == b);
  Boxed<Death> moved = std::move(b);
  EXPECT_EQ(moved->how, "oom-kill");
}

TEST(Boxed, KeepsProcessSnapshotSmall) {
  // One pointer each, not the optional's inline Death (over 400 bytes), CoreInfo, MemoryUsage.
  EXPECT_EQ(sizeof(Boxed<Death>), sizeof(void*));
  EXPECT_LT(sizeof(ProcessSnapshot), 600u);
}

}  // namespace
}  // namespace hangscan
