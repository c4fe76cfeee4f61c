#include "group/analysis.h"

#include <gtest/gtest.h>

#include "report/finding_words.h"
#include "report/member_words.h"

#include <algorithm>

#include "job_builder.h"

namespace hangscan {
namespace {

using namespace hangscan::testing;

JobSnapshot gloo_job() {
  JobSnapshot job;
  job.processes.push_back(rank_process(0, 100, in_all_reduce()));
  job.processes.push_back(rank_process(1, 101, in_all_reduce()));
  job.processes.push_back(rank_process(2, 102, in_sleep()));
  job.processes.push_back(rank_process(3, 103, in_all_reduce()));
  return job;
}

std::vector<std::string> functions(const std::vector<Frame>& frames) {
  std::vector<std::string> out;
  for (const Frame& f : frames) out.push_back(f.function);
  return out;
}

TEST(Analyze, NamesTheRankThatSkippedAllReduce) {
  JobSnapshot job = gloo_job();
  // Helper threads differ between ranks and must not split the groups.
  ThreadSnapshot store;
  store.tid = 200;
  store.name = "tcpstore";
  store.frames = {native("accept", "/lib/libc.so.6", 0x10)};
  job.processes[0].threads.push_back(store);
  // The launcher is reported but never grouped.
  ProcessSnapshot launcher;
  launcher.pid = 99;
  launcher.role = "launcher";
  job.processes.push_back(launcher);

  Analysis a = analyze(job, GroupOptions{});
  ASSERT_EQ(a.groups.size(), 2u);
  EXPECT_EQ(a.groups[0].ranks, (std::vector<int>{2}));
  EXPECT_EQ(a.groups[0].pids, (std::vector<int>{102}));
  EXPECT_TRUE(a.groups[0].suspect);
  EXPECT_EQ(a.groups[1].ranks, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(a.groups[1].pids, (std::vector<int>{100, 101, 103}));
  EXPECT_EQ(a.groups[1].hosts, (std::vector<std::string>{"n1"}));
  EXPECT_FALSE(a.groups[1].suspect);
  EXPECT_EQ(functions(a.groups[1].frames),
            (std::vector<std::string>{"all_reduce", "worker", "<module>"}));
  EXPECT_EQ(a.groups[1].frames[0].line, 1541);          // all members agree
  EXPECT_EQ(a.groups[1].frames[1].line, std::nullopt);  // 19 vs 20 at function granularity
  EXPECT_EQ(a.suspects, (std::vector<int>{2}));
  EXPECT_EQ(a.suspect_members, (std::vector<std::size_t>{2}));
  ASSERT_EQ(verdict_words(job, a).suspect_reasons.size(), 1u);
  EXPECT_EQ(verdict_words(job, a).suspect_reasons[0],
            "rank 2 is not in all_reduce with ranks 0-1,3: it is in worker (hang_gloo.py:19) -> "
            "time.sleep");
  EXPECT_TRUE(a.missing_ranks.empty());
  EXPECT_TRUE(verdict_words(job, a).notes.empty());
  EXPECT_EQ(a.grouped, (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_EQ(a.group_of[4], Analysis::kNoGroup);
  EXPECT_EQ(a.group_of[2], 0u);
}

TEST(Analyze, IncompleteStackIsNotASuspectForWhereItStarts) {
  // An MPI rank stopped mid-poll whose unwind was lost after two frames: its stack "starts"
  // in ?? instead of <module>, which says nothing about where the rank is.
  JobSnapshot job;
  job.processes.push_back(rank_process(0, 100, in_all_reduce()));
  job.processes.push_back(rank_process(1, 101, in_all_reduce()));
  job.processes.push_back(rank_process(2, 102, in_sleep()));
  job.processes.push_back(
      rank_process(3, 103,
                   {native("??", "/usr/lib/x86_64-linux-gnu/libuct.so.0", 0x9475),
                    native("??", "/usr/lib/x86_64-linux-gnu/libmpich.so.12", 0x934eb)}));
  Analysis lost = analyze(job, GroupOptions{});
  EXPECT_EQ(lost.suspects, (std::vector<int>{2, 3}));  // not marked: named for its root

  job.processes[3].threads[0].incomplete = true;
  Analysis a = analyze(job, GroupOptions{});
  EXPECT_EQ(a.suspects, (std::vector<int>{2}));
  ASSERT_EQ(verdict_words(job, a).suspect_reasons.size(), 1u);
  EXPECT_EQ(verdict_words(job, a).suspect_reasons[0],
            "rank 2 is not in all_reduce with ranks 0-1: it is in worker (hang_gloo.py:19) -> "
            "time.sleep");
  EXPECT_EQ(
      verdict_words(job, a).notes,
      (std::vector<std::string>{
          "rank 3 has an incomplete stack (unwinding stopped after ?? in libmpich.so.12); not "
          "named a suspect for it"}));
  // It is still grouped and shown: its own group, not a suspect.
  ASSERT_EQ(a.group_of[3] == Analysis::kNoGroup, false);
  EXPECT_FALSE(a.groups[a.group_of[3]].suspect);
}

TEST(Analyze, TrieCarriesMemberSets) {
  JobSnapshot job = gloo_job();
  Analysis a = analyze(job, GroupOptions{});
  const StackTrie& t = a.trie;
  EXPECT_EQ(t.node(StackTrie::kRoot).member_count, 4u);
  EXPECT_EQ(t.members(StackTrie::kRoot), (std::vector<std::size_t>{0, 1, 2, 3}));
  ASSERT_EQ(t.node(StackTrie::kRoot).children.size(), 1u);
  std::size_t module = t.node(StackTrie::kRoot).children[0];
  EXPECT_EQ(t.node(module).frame.function, "<module>");
  EXPECT_EQ(t.node(module).frame.line, 30);
  std::size_t worker = t.node(module).children.at(0);
  ASSERT_EQ(t.node(worker).children.size(), 2u);
  EXPECT_EQ(member_set_label(job, t.members(t.node(worker).children[0])), "0-1,3");
  EXPECT_EQ(member_set_label(job, t.members(t.node(worker).children[1])), "2");
  EXPECT_EQ(t.node(t.node(worker).children[0]).member_count, 3u);
  EXPECT_EQ(t.node(t.node(worker).children[1]).frame.function, "time.sleep");
}

TEST(Analyze, TrieMembersBelowManyStacks) {
  // Twelve ranks under one outer frame, each in a stack of its own, inserted out of rank order
  // (process index order is what members() lists): more endings than are merged one by one.
  JobSnapshot job;
  for (int i = 0; i < 12; ++i) {
    int rank = (i * 5) % 12;
    job.processes.push_back(
        rank_process(rank, 100 + i,
                     {py("step" + std::to_string(rank), "/t/a.py", 3), py("main", "/t/a.py", 1)}));
  }
  Analysis a = analyze(job, GroupOptions{});
  const StackTrie& t = a.trie;
  ASSERT_EQ(t.node(StackTrie::kRoot).children.size(), 1u);
  std::size_t main_node = t.node(StackTrie::kRoot).children[0];
  EXPECT_EQ(t.node(main_node).member_count, 12u);
  std::vector<std::size_t> all(12);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  EXPECT_EQ(t.members(main_node), all);
  EXPECT_EQ(t.members(StackTrie::kRoot), all);
  EXPECT_EQ(member_set_label(job, t.members(main_node)), "0-11");
  std::size_t third = t.node(main_node).children.at(3);
  EXPECT_EQ(t.members(third), (std::vector<std::size_t>{3}));
  EXPECT_EQ(t.node(third).member_count, 1u);
}

TEST(Analyze, NoClearMajorityNamesNobody) {
  JobSnapshot job;
  std::vector<Frame> barrier = in_all_reduce();
  barrier[0].function = "barrier";
  job.processes.push_back(rank_process(0, 100, in_all_reduce()));
  job.processes.push_back(rank_process(1, 101, in_all_reduce()));
  job.processes.push_back(rank_process(2, 102, barrier));
  job.processes.push_back(rank_process(3, 103, barrier));
  Analysis a = analyze(job, GroupOptions{});
  EXPECT_EQ(a.groups.size(), 2u);
  EXPECT_TRUE(a.suspects.empty());
  EXPECT_TRUE(verdict_words(job, a).suspect_reasons.empty());
  ASSERT_EQ(verdict_words(job, a).notes.size(), 1u);
  EXPECT_EQ(
      verdict_words(job, a).notes[0],
      "no clear majority: below worker, ranks 0-1 are in all_reduce and ranks 2-3 are in barrier; "
      "no suspect named");
  EXPECT_FALSE(a.groups[0].suspect);
  EXPECT_FALSE(a.groups[1].suspect);
}

TEST(Analyze, EveryoneDistinctNamesNobody) {
  JobSnapshot job;
  for (int r = 0; r < 3; ++r) {
    job.processes.push_back(rank_process(r, 100 + r, {py("f" + std::to_string(r), "/x/a.py", 1)}));
  }
  Analysis a = analyze(job, GroupOptions{});
  EXPECT_EQ(a.groups.size(), 3u);
  EXPECT_TRUE(a.suspects.empty());
  ASSERT_EQ(verdict_words(job, a).notes.size(), 1u);
  EXPECT_EQ(
      verdict_words(job, a).notes[0],
      "no clear majority: rank 0 is in f0, rank 1 is in f1 and rank 2 is in f2; no suspect named");
}

TEST(Analyze, AllTheSameIsSaidPlainly) {
  JobSnapshot job;
  for (int r = 0; r < 4; ++r)
    job.processes.push_back(rank_process(r, 100 + r, in_all_reduce(), 'S', "n1", 4));
  Analysis a = analyze(job, GroupOptions{});
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_TRUE(a.suspects.empty());
  EXPECT_EQ(
      verdict_words(job, a).notes,
      (std::vector<std::string>{"all 4 ranks have the same stack",
                                "--locals can tell them apart: ranks on the same line may be in "
                                "different iterations of a loop"}));
  EXPECT_EQ(a.world_size, 4);
}

TEST(Analyze, MissingRanksByWorldSize) {
  JobSnapshot job;
  for (int r : {0, 1, 3})
    job.processes.push_back(rank_process(r, 100 + r, in_all_reduce(), 'S', "n1", 6));
  Analysis a = analyze(job, GroupOptions{});
  EXPECT_EQ(a.missing_ranks, (std::vector<int>{2, 4, 5}));
  EXPECT_EQ(a.suspects, (std::vector<int>{2, 4, 5}));
  EXPECT_TRUE(a.suspect_members.empty());
  EXPECT_EQ(verdict_words(job, a).suspect_reasons,
            (std::vector<std::string>{"ranks 2,4-5 are missing: the world size is 6 but no process "
                                      "with ranks 2,4-5 was found"}));
  job.expected_world_size = 4;  // an explicit expectation wins over the environment
  Analysis b = analyze(job, GroupOptions{});
  EXPECT_EQ(b.missing_ranks, (std::vector<int>{2}));
  EXPECT_EQ(verdict_words(job, b).suspect_reasons,
            (std::vector<std::string>{
                "rank 2 is missing: the world size is 4 but no process with rank 2 was found"}));
  job.expected_world_size = 2000000000;
  Analysis c = analyze(job, GroupOptions{});
  EXPECT_TRUE(c.missing_ranks.empty());
  std::vector<std::string> c_notes = verdict_words(job, c).notes;
  EXPECT_NE(std::find(c_notes.begin(), c_notes.end(),
                      "world size 2000000000 is implausible; missing ranks not listed"),
            c_notes.end());
}

TEST(Analyze, BadProcessStatesAreSuspects) {
  JobSnapshot job;
  for (int r = 0; r < 4; ++r) job.processes.push_back(rank_process(r, 100 + r, in_all_reduce()));
  job.processes[1].threads[0].state = 'D';
  job.processes[1].threads[0].wchan = "nfs_wait_bit_killable";
  job.processes[3].state = 'Z';
  job.processes[3].threads.clear();  // a zombie has no readable threads
  job.processes.push_back(rank_process(4, 104, in_all_reduce(), 'T'));
  Analysis a = analyze(job, GroupOptions{});
  // rank 3 (no stack) is also a minority of one against four ranks in all_reduce.
  EXPECT_EQ(a.suspects, (std::vector<int>{1, 3, 4}));
  EXPECT_EQ(verdict_words(job, a).suspect_reasons,
            (std::vector<std::string>{
                "rank 3 is not in all_reduce with ranks 0-2,4: it has no stack",
                "rank 1 is in uninterruptible sleep (state D) in nfs_wait_bit_killable",
                "rank 4 is stopped (state T)",
                "rank 3 is a zombie (state Z): exited but not reaped by the parent"}));
}

TEST(Analyze, ProcessesWithoutRankAreNamedByHostAndPid) {
  JobSnapshot job;
  for (int pid : {10, 11, 12}) {
    ProcessSnapshot p = rank_process(0, pid, pid == 12 ? in_sleep() : in_all_reduce());
    p.rank.reset();
    p.role = "process";
    job.processes.push_back(p);
  }
  Analysis a = analyze(job, GroupOptions{});
  EXPECT_TRUE(a.suspects.empty());  // no ranks to list
  EXPECT_EQ(a.suspect_members, (std::vector<std::size_t>{2}));
  EXPECT_EQ(verdict_words(job, a).suspect_reasons,
            (std::vector<std::string>{
                "process n1:12 is not in all_reduce with processes n1:10,n1:11: it is in "
                "worker (hang_gloo.py:19) -> time.sleep"}));
  EXPECT_EQ(member_set_label(job, a.groups[1].members), "n1:10,n1:11");
}

TEST(Analyze, MultiHostSentenceNamesTheNode) {
  JobSnapshot job;
  for (int r = 0; r < 6; ++r) {
    job.processes.push_back(rank_process(r, 100 + r % 2, r == 4 ? in_sleep() : in_all_reduce(), 'S',
                                         "n" + std::to_string(r / 2 + 1)));
  }
  Analysis a = analyze(job, GroupOptions{});
  EXPECT_EQ(a.suspects, (std::vector<int>{4}));
  EXPECT_EQ(a.groups[0].hosts, (std::vector<std::string>{"n3"}));
  EXPECT_EQ(a.groups[1].hosts, (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(verdict_words(job, a).suspect_reasons,
            (std::vector<std::string>{
                "rank 4 on n3 is not in all_reduce with ranks 0-3,5: it is in worker "
                "(hang_gloo.py:19) -> time.sleep"}));
}

TEST(Analyze, DeeperMinorityFlaggedOnlyWhenBlocked) {
  // 7 ranks: rank 6 sleeps at the top; inside train, rank 5 waits in load_batch (blocked) and
  // rank 4 computes in another function (running): only 5 and 6 are suspects.
  auto stack = [](const char* inner) {
    return std::vector<Frame>{py(inner, "/t/train.py", 7), py("train", "/t/train.py", 3),
                              py("<module>", "/t/train.py", 1)};
  };
  JobSnapshot job;
  for (int r = 0; r < 4; ++r)
    job.processes.push_back(rank_process(r, 100 + r, stack("all_reduce")));
  job.processes.push_back(rank_process(4, 104, stack("compute"), 'R'));
  job.processes.push_back(rank_process(5, 105, stack("load_batch")));
  job.processes.push_back(
      rank_process(6, 106, {py("sleep", "/t/train.py", 9), py("<module>", "/t/train.py", 1)}));
  Analysis a = analyze(job, GroupOptions{});
  EXPECT_EQ(a.suspects, (std::vector<int>{5, 6}));
  EXPECT_EQ(verdict_words(job, a).suspect_reasons,
            (std::vector<std::string>{"rank 6 is not in train with ranks 0-5: it is in <module> "
                                      "(train.py:1) -> sleep (train.py:9)",
                                      "rank 5 is not in all_reduce with ranks 0-3: it is in train "
                                      "(train.py:3) -> load_batch (train.py:7)"}));
  // groups: three singletons (by rank) then the four
  ASSERT_EQ(a.groups.size(), 4u);
  EXPECT_EQ(a.groups[0].ranks, (std::vector<int>{4}));
  EXPECT_FALSE(a.groups[0].suspect);
  EXPECT_EQ(a.groups[3].ranks, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Analyze, GranularityAndTopN) {
  JobSnapshot job;
  for (int r = 0; r < 3; ++r) {
    std::vector<Frame> s = {
        native("poll", "/lib/libc.so.6", 0x100 + static_cast<unsigned>(r == 2) * 8),
        native("wait", "/lib/libx.so", 0x200), native("main", "/bin/app", 0x50)};
    s[2].file = "app.c";
    s[2].line = r == 1 ? 11 : 10;
    job.processes.push_back(rank_process(r, 100 + r, s));
  }
  GroupOptions by_function;
  EXPECT_EQ(analyze(job, by_function).groups.size(), 1u);
  GroupOptions by_line;
  by_line.granularity = GroupOptions::Granularity::function_line;
  Analysis l = analyze(job, by_line);
  ASSERT_EQ(l.groups.size(), 2u);
  EXPECT_EQ(l.groups[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(verdict_words(job, l).suspect_reasons,
            (std::vector<std::string>{
                "rank 1 is not in main with ranks 0,2: it is in main (app.c:11) -> ... -> poll"}));
  GroupOptions by_pc;
  by_pc.granularity = GroupOptions::Granularity::pc;
  Analysis p = analyze(job, by_pc);
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_EQ(p.groups[0].ranks, (std::vector<int>{2}));
  EXPECT_EQ(p.groups[0].frames[0].offset, 0x108u);
  GroupOptions top;
  top.granularity = GroupOptions::Granularity::function_line;
  top.top_n = 2;  // main's line no longer counts
  Analysis t = analyze(job, top);
  EXPECT_EQ(t.groups.size(), 1u);
  EXPECT_EQ(t.groups[0].frames.size(), 2u);
}

TEST(Analyze, ThreadSelections) {
  JobSnapshot job = gloo_job();
  for (ProcessSnapshot& p : job.processes) {
    ThreadSnapshot w;
    w.tid = p.pid + 1000;
    w.name = "pt_autograd_0";
    w.gil = p.rank == 1;
    w.frames = {py("backward", "/t/engine.py", p.rank == 1 ? 5 : 4)};
    p.threads.push_back(w);
  }
  GroupOptions matching;
  matching.threads = GroupOptions::Threads::matching;
  matching.thread_regex = "^pt_autograd";
  Analysis m = analyze(job, matching);
  EXPECT_EQ(m.groups.size(), 1u);
  matching.granularity = GroupOptions::Granularity::function_line;
  EXPECT_EQ(analyze(job, matching).suspects, (std::vector<int>{1}));

  GroupOptions gil;
  gil.threads = GroupOptions::Threads::gil;
  Analysis g = analyze(job, gil);
  ASSERT_EQ(g.groups.size(), 2u);
  EXPECT_EQ(g.groups[0].ranks,
            (std::vector<int>{1}));  // the only rank whose GIL holder has a stack
  EXPECT_EQ(g.groups[1].frames.size(), 0u);

  GroupOptions all;
  all.threads = GroupOptions::Threads::all;
  Analysis w = analyze(job, all);
  EXPECT_EQ(w.groups.size(), 2u);  // {2} and {0,1,3}: both threads at function granularity
  EXPECT_EQ(w.suspects, (std::vector<int>{2}));
  // Every process ends on two nodes (main thread and worker): counts are unions, not sums.
  const StackTrie& wt = w.trie;
  EXPECT_EQ(wt.node(StackTrie::kRoot).member_count, 4u);
  EXPECT_EQ(wt.members(StackTrie::kRoot), (std::vector<std::size_t>{0, 1, 2, 3}));
  ASSERT_EQ(wt.node(StackTrie::kRoot).children.size(), 2u);
  for (std::size_t c : wt.node(StackTrie::kRoot).children) {
    EXPECT_EQ(wt.node(c).member_count, 4u);
    EXPECT_EQ(wt.members(c).size(), 4u);
  }

  GroupOptions bad;
  bad.threads = GroupOptions::Threads::matching;
  bad.thread_regex = "([";
  EXPECT_FALSE(validate_group_options(bad).ok());
  EXPECT_EQ(validate_group_options(bad).error().code, Errc::usage);
  EXPECT_TRUE(validate_group_options(GroupOptions{}).ok());
  Analysis b = analyze(job, bad);
  EXPECT_EQ(verdict_words(job, b).notes.front(),
            "thread regex \"([\" is invalid: no thread selected");
}

TEST(Analyze, FallsBackToAllProcessesWhenNoRanks) {
  JobSnapshot job;
  ProcessSnapshot p = rank_process(0, 7, in_sleep());
  p.rank.reset();
  p.role = "";
  p.host = "";
  job.processes.push_back(p);
  Analysis a = analyze(job, GroupOptions{});
  EXPECT_EQ(a.grouped, (std::vector<std::size_t>{0}));
  EXPECT_TRUE(verdict_words(job, a).notes.empty());
  EXPECT_EQ(member_name(job.processes[0]), "pid 7");
  EXPECT_EQ(describe_members(job, {0}), "pid 7");
}

// Two kernel deaths while rank 2 is missing: the one-death-one-rank inference cannot choose;
// n2's torchrun (pid 50) names pid 200 as its local rank 0 and its living child rank 3 is local
// rank 1, so pid 200 was rank 2 exactly; the other death stays unlinked.
TEST(Analyze, AReapedWorkersRankFromItsLaunchersOwnList) {
  JobSnapshot job;
  for (int r : {0, 1}) {
    job.processes.push_back(rank_process(r, 100 + r, in_all_reduce(), 'S', "n1", 4));
    job.processes.back().ppid = 40;
    job.processes.back().local_rank = r;
  }
  job.processes.push_back(rank_process(3, 201, in_all_reduce(), 'S', "n2", 4));
  job.processes.back().ppid = 50;
  job.processes.back().local_rank = 1;
  ProcessSnapshot launcher = rank_process(0, 50, {py("_close", "api.py", 700)}, 'S', "n2");
  launcher.rank.reset();
  launcher.role = "launcher";
  launcher.worker_local_ranks = {{200, 0}, {201, 1}};
  job.processes.push_back(launcher);
  for (auto [pid, host] : {std::pair{200, "n2"}, std::pair{300, "n1"}})
    job.deaths.push_back(Death{.how = "oom-kill", .pid = pid, .host = host});
  Analysis a = analyze(job, GroupOptions{});
  std::vector<std::pair<std::optional<int>, Finding::RankFrom>> got;
  for (const Finding& f : a.findings) {
    if (f.kind == FindingKind::death) got.emplace_back(f.rank, f.rank_from);
  }
  EXPECT_EQ(got, (std::vector<std::pair<std::optional<int>, Finding::RankFrom>>{
                     {2, Finding::RankFrom::launcher}, {std::nullopt, Finding::RankFrom::none}}));
  job.processes[3].worker_local_ranks.clear();  // without the list: neither is linked
  Analysis b = analyze(job, GroupOptions{});
  for (const Finding& f : b.findings) {
    if (f.kind == FindingKind::death) {
      EXPECT_EQ(f.rank, std::nullopt);
    }
  }
}

}  // namespace
}  // namespace hangscan
