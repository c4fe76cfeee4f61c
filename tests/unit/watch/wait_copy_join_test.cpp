// Waits that announce a copy meet it (same thread, seq in the copy's range), keep their own
// kernel stack, and go on without a stack when the copy is stale, never comes, or the window
// ends; the decoder reads the copy records the kernel sends.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>

#include "watch/records.h"
#include "watch/wait_copy_join.h"
#include "watch_events.h"

namespace hangscan {
namespace {

using Clock = WaitCopyJoin::Clock;

WaitRecord wait_of(int tid, std::uint64_t seq, bool follows) {
  WaitRecord w;
  w.pid = 100;
  w.tid = tid;
  w.seq = seq;
  w.copy_follows = follows;
  w.copy.kernel = {0xffffffff81000000ULL + seq};  // where it slept
  return w;
}

WaitCopyRecord copy_of_thread(int tid, std::uint64_t first, std::uint64_t last, bool stale) {
  WaitCopyRecord c;
  c.pid = 100;
  c.tid = tid;
  c.first_seq = first;
  c.last_seq = last;
  c.stale = stale;
  c.copy.stack.start = 0x7ffd0000;
  c.copy.stack.bytes = {1, 2, 3};
  return c;
}

TEST(WaitCopyJoin, AWaitMeetsItsCopyInALaterBatchAndKeepsItsKernelStack) {
  WaitCopyJoin join;
  Clock::time_point t0 = Clock::now();
  Recording first;
  first.waits = {wait_of(7, 3, true), wait_of(8, 1, false)};
  join.join(first, t0, false);
  ASSERT_EQ(first.waits.size(), 1u);  // the one without a copy to come goes on at once
  EXPECT_EQ(first.waits[0].tid, 8);
  EXPECT_EQ(join.held(), 1u);

  Recording second;
  second.wait_copies = {copy_of_thread(9, 3, 3, false), copy_of_thread(7, 2, 4, false)};
  join.join(second, t0 + std::chrono::milliseconds(5), false);
  ASSERT_EQ(second.waits.size(), 1u);
  const WaitRecord& w = second.waits[0];
  EXPECT_EQ(w.tid, 7);
  EXPECT_TRUE(w.has_user_stack);
  EXPECT_EQ(w.copy.stack.start, 0x7ffd0000u);
  EXPECT_EQ(w.copy.stack.bytes.size(), 3u);
  ASSERT_EQ(w.copy.kernel.size(), 1u);
  EXPECT_EQ(w.copy.kernel[0], 0xffffffff81000003ULL);
  EXPECT_TRUE(second.wait_copies.empty());
  EXPECT_EQ(join.held(), 0u);
  EXPECT_EQ(join.without_copy(), 0u);
}

// Two waits in one system call (the thread never went back to user space between them): one
// copy covers both; one outside its range stays held.
TEST(WaitCopyJoin, OneCopyCoversEveryWaitInItsRange) {
  WaitCopyJoin join;
  Recording got;
  got.waits = {wait_of(7, 3, true), wait_of(7, 4, true), wait_of(7, 5, true)};
  got.wait_copies = {copy_of_thread(7, 3, 4, false)};
  join.join(got, Clock::now(), false);
  ASSERT_EQ(got.waits.size(), 2u);
  EXPECT_EQ(got.waits[0].seq, 3u);
  EXPECT_EQ(got.waits[1].seq, 4u);
  EXPECT_TRUE(got.waits[0].has_user_stack && got.waits[1].has_user_stack);
  EXPECT_EQ(join.held(), 1u);
}

TEST(WaitCopyJoin, StaleMissingAndEndOfWindowGoOnWithoutAStack) {
  WaitCopyJoin join;
  Clock::time_point t0 = Clock::now();
  Recording got;
  got.waits = {wait_of(7, 3, true), wait_of(8, 1, true), wait_of(9, 1, true)};
  got.wait_copies = {copy_of_thread(7, 3, 3, true)};
  join.join(got, t0, false);
  ASSERT_EQ(got.waits.size(), 1u);  // the stale copy's wait
  EXPECT_EQ(got.waits[0].tid, 7);
  EXPECT_FALSE(got.waits[0].has_user_stack);
  EXPECT_EQ(got.waits[0].copy.kernel.size(), 1u);

  Recording later;  // past the deadline: thread 8's copy never came
  join.join(later, t0 + WaitCopyJoin::kDeadline, false);
  EXPECT_EQ(later.waits.size(), 2u);
  EXPECT_EQ(join.held(), 0u);
  EXPECT_EQ(join.without_copy(), 3u);

  Recording end;
  end.waits = {wait_of(10, 1, true)};
  join.join(end, t0 + WaitCopyJoin::kDeadline, true);  // the window ends: nothing is held
  ASSERT_EQ(end.waits.size(), 1u);
  EXPECT_FALSE(end.waits[0].has_user_stack);
}

TEST(WaitCopyJoin, DecodesTheKernelsCopyRecords) {
  auto e = std::make_unique<hs_wait_copy_py>();
  std::memset(e.get(), 0, sizeof(*e));
  e->c.h.kind = HS_EV_WAIT_COPY_PY;
  e->c.h.pid = 100;
  e->c.h.tid = 7;
  e->c.first_seq = 3;
  e->c.last_seq = 4;
  e->c.u.regs.sp = 0x7ffd0000;
  e->c.u.regs.ip = 0x401000;
  e->c.u.stack_len = 16;
  e->py.status = HS_PY_OK;
  e->py.nframes = 1;
  e->py.f[0].code = 0x1234;
  Recording out;
  ASSERT_TRUE(decode_record(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(e.get()), sizeof(*e)),
      out));
  ASSERT_EQ(out.wait_copies.size(), 1u);
  const WaitCopyRecord& c = out.wait_copies[0];
  EXPECT_EQ(c.tid, 7);
  EXPECT_EQ(c.first_seq, 3u);
  EXPECT_EQ(c.last_seq, 4u);
  EXPECT_FALSE(c.stale);
  EXPECT_EQ(c.copy.stack.bytes.size(), 16u);
  EXPECT_EQ(c.copy.regs.raw.rip, 0x401000u);
  ASSERT_TRUE(c.copy.python.has_value());
  ASSERT_EQ(c.copy.python->frames.size(), 1u);
  EXPECT_EQ(c.copy.python->frames[0].code_addr, 0x1234u);

  hs_wait w{};
  w.h.kind = HS_EV_WAIT;
  w.h.tid = 7;
  w.seq = 3;
  w.copy_follows = 1;
  ASSERT_TRUE(decode_record(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&w), sizeof(w)), out));
  ASSERT_EQ(out.waits.size(), 1u);
  EXPECT_TRUE(out.waits[0].copy_follows);
  EXPECT_FALSE(out.waits[0].has_user_stack);
}

}  // namespace
}  // namespace hangscan
