// Ranks grouped by what they did in a watch window: stuck in the same wait, ended, or active.
#include <gtest/gtest.h>

#include <csignal>
#include <string>

#include "group/roles.h"
#include "watch/watch_format.h"
#include "watch/watch_groups.h"
#include "watch/watch_words.h"

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
  EXPECT_EQ(r.verdict.groups[0].behaviour.kind, BehaviourKind::active);
  EXPECT_DOUBLE_EQ(r.verdict.groups[0].behaviour.cpu_share, 0.98);
  EXPECT_EQ(behaviour_words(r.verdict.groups[0].behaviour), "active (on CPU 98%, 0 waits ended)");
  EXPECT_EQ(r.verdict.groups[1].ranks, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(r.verdict.groups[1].behaviour.kind, BehaviourKind::stuck);
  EXPECT_EQ(r.verdict.groups[1].behaviour.syscall, "read");
  EXPECT_DOUBLE_EQ(r.verdict.groups[1].behaviour.wait_s, 9.0);
  EXPECT_EQ(behaviour_words(r.verdict.groups[1].behaviour), "stuck in read() (9.0 s)");
  // The suspect as a finding (data), and in words at the writers' edge.
  ASSERT_NE(r.verdict.basis, nullptr);
  ASSERT_EQ(r.verdict.basis->analysis.findings.size(), 1u);
  const Finding& f = r.verdict.basis->analysis.findings[0];
  EXPECT_EQ(f.kind, FindingKind::divergence);
  ASSERT_EQ(f.members.size(), 1u);
  EXPECT_EQ(r.verdict.basis->job.processes[f.members[0]].rank, 2);
  ASSERT_EQ(watch_verdict_words(r.verdict).suspect_reasons.size(), 1u);
  std::string text = watch_text(r);
  EXPECT_NE(text.find("  * rank 2: active (on CPU 98%, 0 waits ended)"), std::string::npos) << text;
  EXPECT_NE(text.find("  ranks 0-1,3: stuck in read() (9.0 s)"), std::string::npos) << text;
  auto j = watch_json(r);
  EXPECT_EQ(j["suspects"], std::vector<int>{2});
  EXPECT_EQ(j["groups"][1]["ranks"], (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(j["groups"][1]["what"], "stuck in read() (9.0 s)");
  EXPECT_EQ(j["groups"][1]["behaviour"]["kind"], "stuck");
  EXPECT_EQ(j["groups"][1]["behaviour"]["syscall"], "read");
  EXPECT_EQ(j["findings"].size(), 1u);
  EXPECT_EQ(j["findings"][0]["kind"], "divergence");
  EXPECT_EQ(j["suspect_reasons"].size(), 1u);
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
  EXPECT_EQ(r.verdict.groups[0].behaviour.kind, BehaviourKind::stuck);
  EXPECT_TRUE(r.verdict.groups[0].behaviour.before_window);
  EXPECT_EQ(behaviour_words(r.verdict.groups[0].behaviour),
            "stuck in read() (9.0 s, since before the window)");
}

// Each behaviour is a kind and its figures; the words are made from them, and the JSON carries
// both and reads back to the same data.
TEST(WatchGroups, BehaviourIsDataAndItsWordsAreMadeFromIt) {
  ProcessWatch ended = rank(0);
  ended.exit = process_exit_of(SIGKILL);
  Behaviour b = behaviour_of(ended, 10);
  EXPECT_EQ(b.kind, BehaviourKind::ended);
  EXPECT_EQ(b.exit.kind, ExitKind::killed);
  EXPECT_EQ(b.exit.signal, SIGKILL);
  EXPECT_EQ(b.key, std::vector<std::string>{"(killed by SIGKILL)"});
  EXPECT_EQ(behaviour_words(b), "killed by SIGKILL");

  ProcessWatch active = rank(1);
  active.cpu_share = 0.5;
  active.wait_count = 7;
  b = behaviour_of(active, 10);
  EXPECT_EQ(b.kind, BehaviourKind::active);
  EXPECT_EQ(b.wait_count, 7u);
  EXPECT_EQ(behaviour_words(b), "active (on CPU 50%, 7 waits ended)");

  ProcessWatch worker = rank(2);
  worker.role = kWorkerRole;
  stuck(worker, "clock_nanosleep", "work");
  Frame& f = worker.waits[0].frames[0];
  f.kind = FrameKind::python;
  f.file = "/srv/app/pool.py";
  f.line = 11;
  worker.waits[0].duration_s = 5.4;
  b = behaviour_of(worker, 10);
  EXPECT_EQ(b.kind, BehaviourKind::pool_wait);
  EXPECT_EQ(b.syscall, "clock_nanosleep");
  EXPECT_DOUBLE_EQ(b.wait_s, 5.4);
  ASSERT_TRUE(b.user_frame);
  EXPECT_EQ(b.user_frame->line, 11);
  EXPECT_EQ(behaviour_words(b), "slept in work (pool.py:11) for 5.4 s (clock_nanosleep())");
  b.before_window = true;
  EXPECT_EQ(behaviour_words(b),
            "slept in work (pool.py:11) for the whole window (clock_nanosleep() for 5.4 s)");

  auto j = behaviour_to_json(b);
  EXPECT_EQ(j["kind"], "pool_wait");
  EXPECT_EQ(j["frame"]["line"], 11);
  std::optional<Behaviour> back = behaviour_from_json(j);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->kind, BehaviourKind::pool_wait);
  EXPECT_EQ(back->key, (std::vector<std::string>{"work", "(stuck in clock_nanosleep())"}));
  EXPECT_EQ(behaviour_words(*back), behaviour_words(b));
  j.erase("kind");
  EXPECT_FALSE(behaviour_from_json(j));
}

}  // namespace
}  // namespace hangscan
