// find_slurm_tasks() on a /proc tree written here: the tasks of one job on one Slurm node,
// told apart from another node's tasks on the same host, the batch step, hangscan's own step
// and other jobs, by their environments alone.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "discovery/slurm_tasks.h"

namespace hangscan {
namespace {

namespace fs = std::filesystem;

class FakeProc {
 public:
  FakeProc() : root_(fs::path(::testing::TempDir()) / fmt::format("slurm_tasks_{}", ::getpid())) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~FakeProc() { fs::remove_all(root_); }
  // A process with this environment (NUL-separated in environ, as the kernel writes it).
  void add(int pid, const std::vector<std::string>& env) {
    fs::path dir = root_ / std::to_string(pid);
    fs::create_directories(dir);
    std::string fields;
    for (int i = 0; i < 48; ++i) fields += " 0";
    std::ofstream(dir / "stat") << fmt::format("{} (python) S 1 {} {} 0 -1 4194560{}\n", pid, pid,
                                               pid, fields);
    std::string text;
    for (const auto& e : env) text += e + '\0';
    std::ofstream(dir / "environ", std::ios::binary) << text;
  }
  std::string root() const { return root_.string(); }

 private:
  fs::path root_;
};

TEST(SlurmTasks, TheJobsTasksOnThisNodeOnly) {
  FakeProc proc;
  const std::vector<std::string> n2 = {"SLURM_JOB_ID=12", "SLURMD_NODENAME=n2"};
  auto with = [](std::vector<std::string> env, const std::string& more) {
    env.push_back(more);
    return env;
  };
  proc.add(300, with(n2, "SLURM_STEP_ID=0"));                                   // rank on n2
  proc.add(200, with(n2, "SLURM_STEPID=0"));                                    // rank on n2
  proc.add(210, {"SLURM_JOB_ID=12", "SLURMD_NODENAME=n1", "SLURM_STEP_ID=0"});  // n1's rank
  proc.add(220, n2);                                                            // batch script
  proc.add(230, with(n2, "SLURM_STEP_ID=4"));                                   // hangscan's step
  proc.add(240, {"SLURM_JOB_ID=13", "SLURMD_NODENAME=n2", "SLURM_STEP_ID=0"});  // other job
  proc.add(250, {"PATH=/bin"});                                                 // not Slurm's
  SlurmTasks t = find_slurm_tasks("12", "n2", {"4"}, proc.root(), 1);
  EXPECT_EQ(t.pids, (std::vector<int>{200, 300}));
  EXPECT_EQ(t.batch, 1u);
  EXPECT_EQ(t.excluded, 1u);

  // With step 0 left out too, no task is left but the batch script: then it is the workload.
  SlurmTasks b = find_slurm_tasks("12", "n2", {"0", "4"}, proc.root(), 1);
  EXPECT_EQ(b.pids, (std::vector<int>{220}));
  EXPECT_EQ(b.batch, 1u);
  EXPECT_EQ(b.excluded, 3u);
  EXPECT_TRUE(find_slurm_tasks("99", "n2", {}, proc.root(), 1).pids.empty());
}

}  // namespace
}  // namespace hangscan
