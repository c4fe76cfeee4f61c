// Findings as data (group/finding.h): exact kinds, members, frame references and figures, and
// the words made from them equal to the suspect sentences.
#include "group/finding.h"

#include <gtest/gtest.h>

#include "group/analysis.h"
#include "job_builder.h"
#include "report/finding_words.h"

namespace hangscan {
namespace {

using namespace hangscan::testing;

JobSnapshot gloo_job_odd_on(const std::string& odd_host = "n1") {
  JobSnapshot job;
  job.processes.push_back(rank_process(0, 100, in_all_reduce()));
  job.processes.push_back(rank_process(1, 101, in_all_reduce()));
  job.processes.push_back(rank_process(2, 102, in_sleep(), 'S', odd_host));
  job.processes.push_back(rank_process(3, 103, in_all_reduce()));
  return job;
}

TEST(Findings, DivergenceNamesMembersMajorityAndFrames) {
  JobSnapshot job = gloo_job_odd_on();
  Analysis a = analyze(job, GroupOptions{});
  ASSERT_EQ(a.findings.size(), 1u);
  const Finding& f = a.findings[0];
  EXPECT_EQ(f.kind, FindingKind::divergence);
  EXPECT_EQ(f.members, (std::vector<std::size_t>{2}));
  EXPECT_EQ(f.others, (std::vector<std::size_t>{0, 1, 3}));
  ASSERT_EQ(f.frames.size(), 2u);
  // The member's own frames (its line 19), not the trie's key frame.
  EXPECT_EQ(f.frames[0].frame, &job.processes[2].threads[0].frames[1]);
  EXPECT_EQ(f.frames[1].frame, &job.processes[2].threads[0].frames[0]);
  EXPECT_EQ(f.gap_before, Finding::kNoGap);
  const Frame* place = resolve(a.trie, f.place);
  ASSERT_NE(place, nullptr);
  EXPECT_EQ(place->function, "all_reduce");
  EXPECT_EQ(place->line, 1541);
  EXPECT_TRUE(f.hosts.empty());
  EXPECT_TRUE(a.wait_findings.empty());
  EXPECT_EQ(finding_sentence(job, a.trie, f), verdict_words(job, a).suspect_reasons[0]);
}

TEST(Findings, HostsOnlyWhenTheJobSpansSeveral) {
  JobSnapshot job = gloo_job_odd_on("n2");
  Analysis a = analyze(job, GroupOptions{});
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].hosts, (std::vector<std::string>{"n2"}));
  EXPECT_EQ(verdict_words(job, a).suspect_reasons[0],
            "rank 2 on n2 is not in all_reduce with ranks 0-1,3: it is in worker "
            "(hang_gloo.py:19) -> time.sleep");
}

TEST(Findings, BadStateAndMissingRanksCarryTheirFigures) {
  JobSnapshot job;
  job.processes.push_back(rank_process(0, 100, in_all_reduce(), 'S', "n1", 5));
  job.processes.push_back(rank_process(1, 101, in_all_reduce(), 'S', "n1", 5));
  job.processes.push_back(rank_process(2, 102, in_all_reduce(), 'D', "n1", 5));
  job.processes[2].threads[0].wchan = "nfs_wait_bit_killable";
  Analysis a = analyze(job, GroupOptions{});
  ASSERT_EQ(a.findings.size(), 2u);
  EXPECT_EQ(a.findings[0].kind, FindingKind::bad_state);
  EXPECT_EQ(a.findings[0].members, (std::vector<std::size_t>{2}));
  EXPECT_EQ(a.findings[0].state, 'D');
  EXPECT_EQ(a.findings[0].wchan, "nfs_wait_bit_killable");
  EXPECT_EQ(a.findings[1].kind, FindingKind::missing_ranks);
  EXPECT_TRUE(a.findings[1].members.empty());
  EXPECT_EQ(a.findings[1].ranks, (std::vector<int>{3, 4}));
  EXPECT_EQ(a.findings[1].world_size, 5);
  EXPECT_EQ(verdict_words(job, a).suspect_reasons,
            (std::vector<std::string>{
                "rank 2 is in uninterruptible sleep (state D) in nfs_wait_bit_killable",
                "ranks 3-4 are missing: the world size is 5 but no process with ranks 3-4 was "
                "found"}));
  EXPECT_STREQ(finding_kind_name(a.findings[1].kind), "missing_ranks");
}

TEST(Findings, NoStackIsADivergenceWithoutFrames) {
  JobSnapshot job = gloo_job_odd_on();
  job.processes[2].threads[0].frames.clear();
  Analysis a = analyze(job, GroupOptions{});
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].kind, FindingKind::divergence);
  EXPECT_TRUE(a.findings[0].frames.empty());
  EXPECT_EQ(verdict_words(job, a).suspect_reasons[0],
            "rank 2 is not in all_reduce with ranks 0-1,3: it has no stack");
}

}  // namespace
}  // namespace hangscan
