// The logs a cluster mode reads beside its capture, as library calls: kubectl's timestamps taken
// off a pod's log (its last written line's time kept), and the Slurm job's output files found
// from scontrol's and srun's words (fanout/slurm_job_logs.h), their problems as data.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fanout/k8s_logs.h"
#include "fanout/slurm_job_logs.h"

namespace hangscan {
namespace {

TEST(PodLogs, KubectlTimesOffTheLastWrittenLineKept) {
  std::string text =
      "2026-11-28T08:00:00Z [rank0]: step 5\n"
      "2026-11-28T08:00:02.5Z \n"
      "no time here\n";
  auto last = strip_kubectl_times(text);
  EXPECT_EQ(text, "[rank0]: step 5\n\nno time here\n");
  ASSERT_TRUE(last.has_value());
  EXPECT_DOUBLE_EQ(*last, 1795852800.0);
  std::string none = "plain\n";
  EXPECT_FALSE(strip_kubectl_times(none).has_value());
}

TEST(SlurmJobLogs, ScontrolFields) {
  auto f = parse_job_output_fields(
      "JobId=42 JobName=train\n   UserId=alice(1001) GroupId=users(100) MCS_label=N/A\n"
      "   BatchFlag=1 Reboot=0\n   BatchHost=n1\n   StdErr=/home/a/slurm-42.out\n"
      "   StdOut=/home/a/slurm-42.out\n");
  EXPECT_EQ(f.uid, 1001u);
  EXPECT_EQ(f.gid, 100u);
  EXPECT_EQ(f.paths, (std::vector<std::string>{"/home/a/slurm-42.out"}));
  EXPECT_TRUE(f.batch);
  EXPECT_EQ(f.batch_host, "n1");
}

TEST(SlurmJobLogs, TaskPatternsAndSrunFiles) {
  TaskPlace p{.task = 3, .node_index = 1, .host = "n2", .job_id = "42"};
  EXPECT_EQ(expand_task_pattern("/o/%j-%3t-%n-%N-%%.out", p), "/o/42-003-1-n2-%.out");
  EXPECT_EQ(expand_task_pattern("/o/\\%t", p), "/o/\\%t");
  SrunFiles f = parse_srun_files(
      {"srun", "-lo", "out-%t", "--error=err-%t", "-D", "/w", "-N2", "python3", "-o", "not-srun"});
  EXPECT_EQ(f.output, "out-%t");
  EXPECT_EQ(f.error, "err-%t");
  EXPECT_EQ(f.chdir, "/w");
}

// A job id that is not one reads nothing and says nothing: the capture that follows says it.
TEST(SlurmJobLogs, NotAJobIdNoLogsNoProblems) {
  JobOutputLogs got = slurm_job_output_logs("42; rm -rf /");
  EXPECT_TRUE(got.logs.empty());
  EXPECT_TRUE(got.problems.empty());
}

}  // namespace
}  // namespace hangscan
