// write_job_cores(): the cores of `dump --gcore` as data, tested without the CLI: a bad mode is a
// usage error, nothing picked writes nothing, and a pid that names another process than the one
// captured is refused (its outcome says why) without a core being written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/core.h>

#include <filesystem>
#include <string>

#include "corewrite/job_cores.h"

namespace hangscan {
namespace {

TEST(JobCores, ModesAndAReusedPid) {
  JobSnapshot job;
  ProcessSnapshot p;
  p.host = "n1";
  p.pid = static_cast<int>(::getpid());
  p.rank = 0;
  p.start_ticks = 1;  // this test started long after boot tick 1: the pid "was reused"
  job.processes.push_back(p);
  Analysis analysis;
  analysis.groups.resize(1);
  analysis.groups[0].members = {0};
  analysis.group_of = {0};
  const std::string dir = ::testing::TempDir() + "job_cores_test";

  auto bad = write_job_cores(job, analysis, JobCoresRequest{"many", dir, 4096});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::usage);
  EXPECT_EQ(bad.error().what(), "--gcore many: not a mode");

  auto none = write_job_cores(job, analysis, JobCoresRequest{"suspects", dir, 4096});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->outcomes.empty());
  EXPECT_EQ(none->written(), 0u);

  auto cores = write_job_cores(job, analysis, JobCoresRequest{"", dir, 4096});
  ASSERT_TRUE(cores.ok()) << cores.error().what();
  ASSERT_EQ(cores->outcomes.size(), 1u);
  EXPECT_EQ(cores->roles, (std::vector<std::string>{"representative"}));
  const CoreOutcome& c = cores->outcomes[0];
  EXPECT_FALSE(c.written());
  EXPECT_EQ(c.node, "n1");
  EXPECT_EQ(c.pid, p.pid);
  EXPECT_EQ(c.rank, 0);
  EXPECT_TRUE(
      c.error.starts_with(fmt::format("pid {} is another process now (started at tick ", p.pid)))
      << c.error;
  EXPECT_TRUE(c.error.ends_with(", the captured one at tick 1): not dumped (the pid was reused)"))
      << c.error;
  EXPECT_EQ(cores->written(), 0u);
  EXPECT_EQ(cores->dir, dir);
  EXPECT_FALSE(std::filesystem::exists(dir));  // refused before any directory was made
}

}  // namespace
}  // namespace hangscan
