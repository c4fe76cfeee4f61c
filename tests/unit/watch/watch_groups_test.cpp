// Ranks grouped by what they did in a watch window: stuck in the same wait, ended, or active.
#include <gtest/gtest.h>

#include <string>

#include "watch/watch_format.h"
#include "watch/watch_groups.h"

namespace hangscan {
namespace {

ProcessWatch rank(int r) {
  ProcessWatch p;
  p.pid = 100 + r;
  p.rank = r;
  p.role = "rank";
  p.comm = "python3";
  return p;
}

void stuck(ProcessWatch& p, const char* call, const char* function) {
  WaitView w;
  w.tid = p.pid;
  w.syscall = call;
  w.duration_s = 9;
  w.ongoing = true;
  Frame f;
  f.function = function;
  w.frames.push_back(f);
  p.waits.push_back(w);
}

// Three ranks stuck in one wait, one active: the active one is named, the others grouped.
TEST(WatchGroups, TheActiveRankAmongStuckOnesIsTheSuspect) {
  WatchReport r;
  r.window_s = 10;
  for (int i = 0; i < 4; ++i) r.processes.push_back(rank(i));
  for (int i : {0, 1, 3}) stuck(r.processes[static_cast<std::size_t>(i)], "read", "all_reduce");
  r.processes[2].cpu_share = 0.98;
  group_watched(r);
  ASSERT_EQ(r.verdict.groups.size(), 2u);
  EXPECT_EQ(r.verdict.suspects, std::vector<int>{2});
  EXPECT_EQ(r.verdict.groups[0].ranks, std::vector<int>{2});
  EXPECT_TRUE(r.verdict.groups[0].suspect);
  EXPECT_EQ(r.verdict.groups[0].what, "active (on CPU 98%, 0 waits ended)");
  EXPECT_EQ(r.verdict.groups[1].ranks, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(r.verdict.groups[1].what, "stuck in read() (9.0 s)");
  ASSERT_EQ(r.verdict.suspect_reasons.size(), 1u);
  std::string text = watch_text(r);
  EXPECT_NE(text.find("  * rank 2: active (on CPU 98%, 0 waits ended)"), std::string::npos) << text;
  EXPECT_NE(text.find("  ranks 0-1,3: stuck in read() (9.0 s)"), std::string::npos) << text;
  auto j = watch_json(r);
  EXPECT_EQ(j["suspects"], std::vector<int>{2});
  EXPECT_EQ(j["groups"][1]["ranks"], (std::vector<int>{0, 1, 3}));
}

// A wait shorter than half the window, or one that ended, is not being stuck; busy ranks whose
// stacks differ are still one group: nobody is named in a job that moves.
TEST(WatchGroups, AJobThatMovesIsOneGroupWithoutSuspects) {
  WatchReport r;
  r.window_s = 10;
  for (int i = 0; i < 3; ++i) r.processes.push_back(rank(i));
  stuck(r.processes[0], "read", "all_reduce");
  r.processes[0].waits[0].duration_s = 4;  // under half the window
  stuck(r.processes[1], "read", "all_reduce");
  r.processes[1].waits[0].ongoing = false;  // it ended
  group_watched(r);
  ASSERT_EQ(r.verdict.groups.size(), 1u);
  EXPECT_TRUE(r.verdict.suspects.empty());
  EXPECT_EQ(r.verdict.groups[0].ranks, (std::vector<int>{0, 1, 2}));
}

// Stuck in different places: the minority is named with where it waits.
TEST(WatchGroups, StuckElsewhereIsNamed) {
  WatchReport r;
  r.window_s = 10;
  for (int i = 0; i < 3; ++i) r.processes.push_back(rank(i));
  stuck(r.processes[0], "futex", "barrier");
  stuck(r.processes[1], "futex", "barrier");
  stuck(r.processes[2], "read", "load_batch");
  r.processes[2].waits[0].before_window = true;
  group_watched(r);
  EXPECT_EQ(r.verdict.suspects, std::vector<int>{2});
  EXPECT_EQ(r.verdict.groups[0].what, "stuck in read() (9.0 s, since before the window)");
}

}  // namespace
}  // namespace hangscan
