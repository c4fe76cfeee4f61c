// Ranks on one stack told apart by a scalar local (group/locals_split.h).
#include "group/locals_split.h"

#include <gtest/gtest.h>

#include "report/finding_words.h"

#include "job_builder.h"

namespace hangscan {
namespace {

using namespace hangscan::testing;

// Four ranks blocked on the same line of a step loop; `steps[r]` is rank r's step.
JobSnapshot step_loop(const std::vector<std::string>& steps) {
  JobSnapshot job;
  for (int r = 0; r < static_cast<int>(steps.size()); ++r) {
    std::vector<Frame> frames = {py_builtin("posix.read"), py("all_reduce", "/job/train.py", 41),
                                 py("train", "/job/train.py", 52),
                                 py("<module>", "/job/train.py", 60)};
    frames[1].locals = {{"step", steps[static_cast<std::size_t>(r)]}, {"tag", "'grad'"}};
    frames[2].locals = {{"rank", std::to_string(r)}, {"lr", "0.1"}};
    job.processes.push_back(rank_process(r, 100 + r, frames));
  }
  return job;
}

TEST(LocalsSplit, TheRankAStepAheadIsNamed) {
  JobSnapshot job = step_loop({"10", "10", "11", "10"});
  Analysis a = analyze(job, GroupOptions{});
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_EQ(
      verdict_words(job, a).suspect_reasons,
      (std::vector<std::string>{"rank 2 is at step=11 in all_reduce (train.py:41); ranks 0-1,3 "
                                "are at step=10"}));
  EXPECT_EQ(a.suspects, (std::vector<int>{2}));
  EXPECT_EQ(a.suspect_members, (std::vector<std::size_t>{2}));
  EXPECT_EQ(verdict_words(job, a).notes,
            (std::vector<std::string>{"all 4 ranks have the same stack"}));
}

TEST(LocalsSplit, DataNamesTheLocalTheValuesAndTheMembers) {
  JobSnapshot job = step_loop({"'eval'", "'train'", "'train'", "'train'", "'init'"});
  for (auto& p : job.processes) {
    Frame& f = p.threads[0].frames[1];
    std::swap(f.locals[0], f.locals[1]);  // `tag` first: it splits nothing
    f.locals[1].name = "phase";
  }
  auto s = split_by_locals(job, {0, 1, 2, 3, 4}, GroupOptions{});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->local, "phase");
  EXPECT_EQ(s->majority.value, "'train'");
  EXPECT_EQ(s->majority.members, (std::vector<std::size_t>{1, 2, 3}));
  ASSERT_EQ(s->minority.size(), 2u);
  EXPECT_EQ(s->minority[0].value, "'eval'");
  EXPECT_EQ(s->minority[0].members, (std::vector<std::size_t>{0}));
  EXPECT_EQ(s->minority[1].value, "'init'");
  EXPECT_EQ(s->minority[1].frame.line, 41);
  EXPECT_EQ(finding_sentences(job, StackTrie(), locals_split_findings(*s)).back(),
            "rank 4 is at phase='init' in all_reduce (train.py:41); ranks 1-3 are at "
            "phase='train'");
}

TEST(LocalsSplit, NoMajorityOrNoScalarNamesNobody) {
  // Every rank at its own step (and `rank` differs everywhere): no value holds a majority.
  EXPECT_FALSE(split_by_locals(step_loop({"1", "2", "3", "4"}), {0, 1, 2, 3}, GroupOptions{}));
  // Two against two is no majority either; floats and objects are not compared.
  EXPECT_FALSE(split_by_locals(step_loop({"1", "1", "2", "2"}), {0, 1, 2, 3}, GroupOptions{}));
  EXPECT_FALSE(
      split_by_locals(step_loop({"1.5", "1.5", "2.5", "1.5"}), {0, 1, 2, 3}, GroupOptions{}));
  EXPECT_FALSE(split_by_locals(
      step_loop({"<Tensor at 0x1>", "<Tensor at 0x1>", "<Tensor at 0x2>", "<Tensor at 0x1>"}),
      {0, 1, 2, 3}, GroupOptions{}));
  // Equal locals: nothing to name, and no note either (--locals was given).
  JobSnapshot job = step_loop({"7", "7", "7"});
  Analysis a = analyze(job, GroupOptions{});
  EXPECT_TRUE(a.suspects.empty());
  EXPECT_EQ(verdict_words(job, a).notes,
            (std::vector<std::string>{"all 3 ranks have the same stack"}));
}

TEST(LocalsSplit, LibraryFramesAreNotUserFrames) {
  JobSnapshot job = step_loop({"10", "10", "11", "10"});
  for (auto& p : job.processes)
    p.threads[0].frames[1].file =
        "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py";
  Analysis a = analyze(job, GroupOptions{});
  EXPECT_TRUE(a.suspects.empty());
}

TEST(LocalsSplit, WithoutLocalsTheNoteSaysLocalsCanTell) {
  JobSnapshot job;
  for (int r = 0; r < 4; ++r) job.processes.push_back(rank_process(r, 100 + r, in_all_reduce()));
  Analysis a = analyze(job, GroupOptions{});
  ASSERT_EQ(verdict_words(job, a).notes.size(), 2u);
  EXPECT_EQ(verdict_words(job, a).notes[1],
            "--locals can tell them apart: ranks on the same line may be in different iterations "
            "of a loop");
  JobSnapshot native_only;  // --locals reads Python locals only: no note for native stacks
  for (int r = 0; r < 3; ++r)
    native_only.processes.push_back(
        rank_process(r, 100 + r, {native("PMPI_Barrier", "/lib/libmpi.so", 0x90)}));
  EXPECT_EQ(verdict_words(native_only, analyze(native_only, GroupOptions{})).notes.size(), 1u);
}

}  // namespace
}  // namespace hangscan
