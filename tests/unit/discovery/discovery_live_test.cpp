// discover() on real running jobs: tests/programs/ring_allreduce.py launching its 4 ranks
// through multiprocessing "spawn" (ranks export RANK only after start, so only libc's
// environ in memory has it) and through Popen (RANK in the start environment).
#include <unistd.h>

#include <limits>

#include <gtest/gtest.h>

#include "child_process.h"
#include "discovery/discovery.h"

namespace hangscan {
namespace {

const char* kPython = "/usr/bin/python3";
const std::string kRing = std::string(HS_SOURCE_DIR) + "/tests/programs/ring_allreduce.py";

std::vector<DiscoveredProcess> discover_job(const std::string& launcher) {
  Child job({kPython, kRing, "{ready}", "--launcher", launcher});
  EXPECT_TRUE(job.wait_ready()) << "ring_allreduce.py did not get ready";
  DiscoveryOptions o;
  o.pids = {job.pid()};
  o.subprocesses = true;
  // This test is the job's parent; hangscan never is, and leaves out its own descendants.
  o.self_pid = std::numeric_limits<int>::max();
  std::vector<Diagnostic> diags;
  auto r = discover(o, &diags);
  EXPECT_TRUE(r.ok()) << r.error().what();
  EXPECT_TRUE(diags.empty());
  std::vector<DiscoveredProcess> out = r.ok() ? *r : std::vector<DiscoveredProcess>{};
  for (auto& p : out) p.ppid = p.ppid == job.pid() ? -1 : p.ppid;  // -1: child of the job
  return out;
}

TEST(DiscoverLive, SpawnRanksFromMemoryEnvironment) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " missing";
  auto ps = discover_job("spawn");
  // 4 ranks, the launcher, multiprocessing's resource tracker.
  ASSERT_EQ(ps.size(), 6u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(ps[r].role, kRoleRank);
    EXPECT_EQ(ps[r].rank, r);
    EXPECT_EQ(ps[r].world_size, 4);
    EXPECT_EQ(ps[r].launcher, "multiprocessing.spawn");
    EXPECT_EQ(ps[r].ppid, -1);
  }
  EXPECT_EQ(ps[4].role, kRoleLauncher);
  EXPECT_EQ(ps[5].role, kRoleHelper);
  EXPECT_EQ(ps[5].owner, ps[4].pid);
  EXPECT_EQ(ps[5].reason, "resource tracker");
}

TEST(DiscoverLive, ForkRanksFromMemoryEnvironment) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " missing";
  auto ps = discover_job("fork");
  ASSERT_EQ(ps.size(), 5u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(ps[r].rank, r);
  EXPECT_EQ(ps[4].role, kRoleLauncher);
  EXPECT_EQ(ps[4].launcher, "multiprocessing");
}

TEST(DiscoverLive, PopenRanksFromStartEnvironment) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " missing";
  auto ps = discover_job("subprocess");
  ASSERT_EQ(ps.size(), 5u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(ps[r].rank, r);
    EXPECT_EQ(ps[r].launcher, "ring_allreduce.py");
  }
  EXPECT_EQ(ps[4].role, kRoleLauncher);
}

}  // namespace
}  // namespace hangscan
