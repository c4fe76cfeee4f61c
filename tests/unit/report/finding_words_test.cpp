// The verdict's words made at the writers' edge (report/finding_words.h): in the order of the
// findings, with --logs' last lines and the logs' own verdict after them.
#include "report/finding_words.h"

#include <gtest/gtest.h>

#include "../group/job_builder.h"

namespace hangscan {
namespace {

using namespace hangscan::testing;

RankLastLog last_log(int rank, std::string file, std::uint64_t line, std::string text,
                     std::optional<double> before, std::string where) {
  return RankLastLog{.rank = rank,
                     .file = std::move(file),
                     .line = line,
                     .kind = "last_line",
                     .text = std::move(text),
                     .before_capture_s = before,
                     .where = std::move(where)};
}

TEST(VerdictWords, LastLogsJoinTheSentencesOfTheirRanks) {
  JobSnapshot job;
  for (int r = 0; r < 4; ++r)
    job.processes.push_back(rank_process(r, 100 + r, r == 2 ? in_sleep() : in_all_reduce()));
  job.expected_world_size = 5;
  Analysis a = analyze(job, GroupOptions{});
  a.last_logs = {last_log(0, "/l/r0.out", 9, "all fine", 1.0, "all_reduce (c10d.py:1541)"),
                 last_log(2, "/l/r2.out", 3, "loading batch 17", 39.5, ""),
                 last_log(4, "r4.out", 1, "starting", -2.0, "")};
  a.suspects.push_back(7);  // a suspect no sentence is about
  a.last_logs.push_back(last_log(7, "/l/r7.out", 2, "boom", std::nullopt, "load (d.py:3)"));
  a.log_verdict = {"rank 2 reported no failure while ranks 0-1,3 did"};
  VerdictWords w = verdict_words(job, a);
  EXPECT_EQ(w.suspect_reasons,
            (std::vector<std::string>{
                "rank 2 is not in all_reduce with ranks 0-1,3: it is in worker (hang_gloo.py:19) "
                "-> time.sleep; last log: \"loading batch 17\" (r2.out:3, 40 s before the dump)",
                "rank 4 is missing: the world size is 5 but no process with rank 4 was found; "
                "last log: \"starting\" (r4.out:1, 2 s after the dump)",
                "rank 7's last log: \"boom\" (r7.out:2); it is in load (d.py:3)",
                "logs: rank 2 reported no failure while ranks 0-1,3 did"}));
  // The words of finding i are the verdict's line i.
  ASSERT_EQ(a.findings.size(), 2u);
  EXPECT_EQ(suspect_words(job, a, 0), w.suspect_reasons[0]);
  EXPECT_EQ(suspect_words(job, a, 1), w.suspect_reasons[1]);
  EXPECT_TRUE(w.notes.empty());
}

}  // namespace
}  // namespace hangscan
