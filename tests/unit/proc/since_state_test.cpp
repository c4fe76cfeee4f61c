// The since-when record: its text, its parser, and what carrying it does to a snapshot.
#include "proc/since_state.h"

#include <gtest/gtest.h>

namespace hangscan {
namespace {

ProcessSnapshot blocked_process(double captured_at, double blocked_s, std::uint64_t slices,
                                std::string syscall = "futex") {
  ProcessSnapshot p;
  p.pid = 4711;
  p.start_ticks = 900;
  p.captured_at = captured_at;
  ThreadSnapshot t;
  t.tid = 4712;
  t.state = 'S';
  t.syscall = std::move(syscall);
  t.syscall_args = {0x10, 0x80, 2, 0, 0, 0};
  t.blocked_s = blocked_s;
  t.timeslices = slices;
  p.threads.push_back(t);
  return p;
}

TEST(SinceState, TextRoundTripsAndRejectsAnythingElse) {
  SinceRecord r{4711, 900, {{4712, 1000.5, 1010.25, 7, 2, "poll", {1, 2, 0xff, 4, 5, 6}}}};
  std::string text = format_since_record(r);
  EXPECT_EQ(text,
            "hangscan-since 1\nprocess 4711 900\nthread 4712 1000.500 1010.250 7 2 poll "
            "1 2 ff 4 5 6\n");
  auto back = parse_since_record(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(format_since_record(*back), text);
  for (const char* bad : {"", "hangscan-since 2\nprocess 1 2\n", "hangscan-since 1\nprocess x 2\n",
                          "hangscan-since 1\nprocess 1 2\nthread 3 nan 1 1 1 poll 0 0 0 0 0 0\n",
                          "hangscan-since 1\nprocess 1 2\nthread 3 1 1 1 1 poll 0 0 0 0 0\n"}) {
    EXPECT_FALSE(parse_since_record(bad).has_value()) << bad;
  }
}

TEST(SinceState, ASecondLookCarriesTheFirstObservation) {
  ProcessSnapshot first = blocked_process(1000.0, 60.0, 10);
  SinceRecord kept = carry_since(first, nullptr, 1);
  EXPECT_EQ(first.threads[0].blocked_first_seen_at, std::nullopt);
  ASSERT_EQ(kept.threads.size(), 1u);
  EXPECT_DOUBLE_EQ(kept.threads[0].since, 940.0);
  // 30 s later the stop has reset the scheduler's record: 29.9 s instead of 90 s.
  ProcessSnapshot second = blocked_process(1030.0, 29.9, 12, "restart_syscall");
  second.threads[0].syscall_args = {0, 0, 0, 0, 0, 0};
  SinceRecord again = carry_since(second, &kept, 1);
  const ThreadSnapshot& t = second.threads[0];
  EXPECT_DOUBLE_EQ(*t.blocked_s, 90.0);
  EXPECT_DOUBLE_EQ(*t.blocked_first_seen_at, 1000.0);
  EXPECT_EQ(*t.syscall, "futex");  // the restarted call and its arguments come back
  EXPECT_EQ(t.syscall_args, (std::vector<std::uint64_t>{0x10, 0x80, 2, 0, 0, 0}));
  EXPECT_EQ(again.threads[0].stops, 2);
  EXPECT_EQ(again.threads[0].timeslices, 10u);
}

TEST(SinceState, AThreadThatRanOrAnotherProcessIsNotCarried) {
  ProcessSnapshot first = blocked_process(1000.0, 60.0, 10);
  SinceRecord kept = carry_since(first, nullptr, 1);
  ProcessSnapshot woke = blocked_process(1030.0, 5.0, 14);  // 4 runs: a wake-up of its own
  carry_since(woke, &kept, 1);
  EXPECT_DOUBLE_EQ(*woke.threads[0].blocked_s, 5.0);
  ProcessSnapshot other_call = blocked_process(1030.0, 5.0, 12, "read");
  carry_since(other_call, &kept, 1);
  EXPECT_DOUBLE_EQ(*other_call.threads[0].blocked_s, 5.0);
  ProcessSnapshot reused = blocked_process(1030.0, 5.0, 12);
  reused.start_ticks = 901;  // the same pid, another process
  carry_since(reused, &kept, 1);
  EXPECT_EQ(reused.threads[0].blocked_first_seen_at, std::nullopt);
  // --samples 3 stopped it three times before this run's last reading: 2 + 2 * 2 runs.
  ProcessSnapshot sampled = blocked_process(1030.0, 1.0, 16);
  carry_since(sampled, &kept, 3);
  EXPECT_DOUBLE_EQ(*sampled.threads[0].blocked_s, 90.0);
}

}  // namespace
}  // namespace hangscan
