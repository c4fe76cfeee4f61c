// sacct's records of a job's steps, as Slurm 22.05 printed them on the test cluster
// (tests/fanout/cluster.sh with HS_SLURM_ACCOUNTING=1 HS_SLURM_CGROUP=1), joined to deaths.
#include "fanout/sacct.h"

#include <gtest/gtest.h>

namespace hangscan {
namespace {

// Job 1: rank 1's step (--mem=100M under task/cgroup) OOM-killed on n2 while the others run.
constexpr const char* kOom =
    "1|RUNNING|0:0|n[1-3]\n"
    "1.batch|RUNNING|0:0|n1\n"
    "1.0|RUNNING|0:0|n1\n"
    "1.1|OUT_OF_MEMORY|0:125|n2\n";

// Job 2: a step that exited 3, one killed by SIGKILL, one cancelled with the job (scancel).
constexpr const char* kMixed =
    "2|CANCELLED by 0|0:0|n[1-3]\n"
    "2.batch|CANCELLED|0:15|n1\n"
    "2.0|FAILED|3:0|n1\n"
    "2.1|CANCELLED|0:9|n2\n"
    "2.2|CANCELLED|0:15|n3\n";

TEST(Sacct, ParsesEveryStep) {
  auto r = parse_sacct(kOom);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].step, "1");
  EXPECT_EQ(r[0].nodes, (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(r[3].step, "1.1");
  EXPECT_EQ(r[3].state, "OUT_OF_MEMORY");
  EXPECT_EQ(r[3].exit_code, "0:125");
  EXPECT_EQ(r[3].nodes, std::vector<std::string>{"n2"});
  EXPECT_TRUE(step_failed(r[3]));
  EXPECT_FALSE(step_failed(r[2]));
  EXPECT_EQ(parse_sacct("garbage\n|x|y|z\n1|RUNNING\n").size(), 0u);
}

TEST(Sacct, StatesThatEndedBadly) {
  auto r = parse_sacct(kMixed);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0].state, "CANCELLED by 0");
  for (const auto& s : r) EXPECT_TRUE(step_failed(s)) << s.step;
  EXPECT_FALSE(step_failed({"3.0", "COMPLETED", "0:0", "n1", {"n1"}}));
  EXPECT_TRUE(step_failed({"3.0", "COMPLETED", "0:9", "n1", {"n1"}}));
  EXPECT_TRUE(step_failed({"3.0", "TIMEOUT", "0:0", "n1", {"n1"}}));
  EXPECT_TRUE(step_failed({"3.0", "NODE_FAIL", "0:0", "n1", {"n1"}}));
}

TEST(Sacct, StartTimeOfScontrol) {
  auto t = parse_start_time(
      "   SubmitTime=2026-11-24T04:22:10 EligibleTime=2026-11-24T04:22:10\n"
      "   StartTime=2026-11-24T04:22:11 EndTime=Unknown Deadline=N/A\n");
  ASSERT_TRUE(t);
  std::time_t tt = static_cast<std::time_t>(*t);
  std::tm tm{};
  localtime_r(&tt, &tm);
  EXPECT_EQ(tm.tm_hour, 4);
  EXPECT_EQ(tm.tm_min, 22);
  EXPECT_EQ(tm.tm_sec, 11);
  EXPECT_FALSE(parse_start_time("StartTime=Unknown EndTime=Unknown"));
  EXPECT_FALSE(parse_start_time("JobId=1"));
}

TEST(Sacct, JoinsTheFailedStepOfTheDeathsNode) {
  JobSnapshot job;
  Death oom;
  oom.how = "oom-kill";
  oom.host = "n2";
  oom.evidence = {"kernel log"};
  job.deaths.push_back(oom);
  join_slurm_records(job, parse_sacct(kOom));
  ASSERT_EQ(job.deaths.size(), 1u);  // the failed step is this death's: no second one
  EXPECT_EQ(job.deaths[0].slurm_step, "1.1");
  EXPECT_EQ(job.deaths[0].slurm_state, "OUT_OF_MEMORY");
  EXPECT_EQ(job.deaths[0].slurm_exit_code, "0:125");
  EXPECT_EQ(job.deaths[0].evidence, (std::vector<std::string>{"kernel log", "sacct"}));
}

TEST(Sacct, AFailedStepWithoutADeathIsOneAndRunningStepsAreSaidAsTheyAre) {
  JobSnapshot job;
  ProcessSnapshot zombie;
  zombie.host = "n1";
  zombie.death = Death{};
  zombie.death->how = "killed";
  job.processes.push_back(zombie);
  join_slurm_records(job, parse_sacct(kOom));
  // n1's only rank step is still RUNNING: said as sacct says it.
  EXPECT_EQ(job.processes[0].death->slurm_step, "1.0");
  EXPECT_EQ(job.processes[0].death->slurm_state, "RUNNING");
  // n2's OOM step has no death seen by a node: a death of its own, from sacct alone.
  ASSERT_EQ(job.deaths.size(), 1u);
  EXPECT_EQ(job.deaths[0].how, "slurm");
  EXPECT_EQ(job.deaths[0].host, "n2");
  EXPECT_EQ(job.deaths[0].slurm_state, "OUT_OF_MEMORY");
  EXPECT_EQ(job.deaths[0].evidence, std::vector<std::string>{"sacct"});
}

TEST(Sacct, TwoFailedStepsOnANodeAreNotGuessedBetween) {
  JobSnapshot job;
  Death d;
  d.how = "killed";
  d.host = "n1";
  job.deaths.push_back(d);
  join_slurm_records(job, parse_sacct("5.0|FAILED|1:0|n1\n5.1|CANCELLED|0:9|n1\n"));
  EXPECT_EQ(job.deaths[0].slurm_step, "");
  EXPECT_EQ(job.deaths.size(), 3u);  // each failed step said on its own
}

TEST(Sacct, Argv) {
  EXPECT_EQ(sacct_argv("sacct", "42"),
            (std::vector<std::string>{"sacct", "-j", "42", "-P", "-n", "-o",
                                      "JobID,State,ExitCode,NodeList"}));
}

}  // namespace
}  // namespace hangscan
