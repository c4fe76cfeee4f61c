// discover() on process trees captured from real jobs (torchrun, torch.multiprocessing.spawn,
// Open MPI, MPICH hydra, a Popen launcher, multiprocessing fork), read from fixture
// directories shaped like /proc; and apply_rank_info().
#include "discovery/discovery.h"

#include <gtest/gtest.h>

namespace hangscan {
namespace {

const std::string kTrees = std::string(HS_FIXTURES) + "/proc/trees";
constexpr int kNotInTree = 999999;  // plays hangscan's own pid

Result<std::vector<DiscoveredProcess>> run(const std::string& tree, std::vector<int> pids,
                                           bool subprocesses, std::string match = {},
                                           std::vector<Diagnostic>* diags = nullptr,
                                           int self = kNotInTree) {
  DiscoveryOptions o;
  o.pids = std::move(pids);
  o.subprocesses = subprocesses;
  o.match = std::move(match);
  o.proc_root = kTrees + "/" + tree;
  o.self_pid = self;
  return discover(o, diags);
}

std::vector<int> ranks_of(const std::vector<DiscoveredProcess>& ps) {
  std::vector<int> out;
  for (const auto& p : ps)
    if (p.role == kRoleRank) out.push_back(p.rank.value_or(-1));
  return out;
}

const DiscoveredProcess& by_pid(const std::vector<DiscoveredProcess>& ps, int pid) {
  for (const auto& p : ps)
    if (p.pid == pid) return p;
  throw std::runtime_error("pid not discovered");
}

TEST(Discover, TorchrunTree) {
  auto r = run("torchrun", {17514}, true);
  ASSERT_TRUE(r.ok()) << r.error().what();
  ASSERT_EQ(r->size(), 5u);
  EXPECT_EQ(ranks_of(*r), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ((*r)[0].pid, 17589);  // ranks first, by rank
  EXPECT_EQ((*r)[0].world_size, 4);
  EXPECT_EQ((*r)[0].local_rank, 0);
  EXPECT_EQ((*r)[0].launcher, "torchrun");
  EXPECT_EQ((*r)[4].pid, 17514);
  EXPECT_EQ((*r)[4].role, kRoleLauncher);
  EXPECT_EQ((*r)[4].launcher, "torchrun");
  EXPECT_FALSE((*r)[0].environment.empty());
}

TEST(Discover, RanksAloneStillKnowTheirLauncher) {
  // --match selects only the ranks; the launcher is an unselected ancestor that still counts.
  auto r = run("torchrun", {}, false, "^/usr/bin/python3[.0-9]* -u .*hang_gloo\\.py");
  ASSERT_TRUE(r.ok()) << r.error().what();
  ASSERT_EQ(r->size(), 4u);
  for (const auto& p : *r) {
    EXPECT_EQ(p.role, kRoleRank);
    EXPECT_EQ(p.launcher, "torchrun");
  }
}

TEST(Discover, OpenMpiTree) {
  auto r = run("openmpi", {16997}, true);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(ranks_of(*r), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(by_pid(*r, 17011).rank, 2);
  EXPECT_EQ(by_pid(*r, 17011).world_size, 4);
  EXPECT_EQ(by_pid(*r, 17011).launcher, "mpirun");
  EXPECT_EQ(by_pid(*r, 16997).role, kRoleLauncher);
}

TEST(Discover, MpichHydraTree) {
  auto r = run("mpich", {17024}, true);
  ASSERT_TRUE(r.ok()) << r.error().what();
  ASSERT_EQ(r->size(), 6u);
  EXPECT_EQ(ranks_of(*r), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(by_pid(*r, 17025).role, kRoleLauncher);  // hydra_pmi_proxy
  EXPECT_EQ(by_pid(*r, 17024).role, kRoleLauncher);  // mpiexec
  EXPECT_EQ(by_pid(*r, 17029).local_rank, 3);
}

TEST(Discover, SpawnTreeFromFilesHasRanksOfUnknownNumber) {
  // /proc/PID/environ of torch.multiprocessing.spawn ranks has no RANK (they set it after
  // start; live discovery reads it from memory): the tree still says they are ranks.
  auto r = run("gloo_spawn", {5352}, true);
  ASSERT_TRUE(r.ok()) << r.error().what();
  ASSERT_EQ(r->size(), 6u);
  EXPECT_EQ(ranks_of(*r), (std::vector<int>{-1, -1, -1, -1}));
  EXPECT_EQ(by_pid(*r, 5352).role, kRoleLauncher);
  EXPECT_EQ(by_pid(*r, 5352).launcher, "multiprocessing.spawn");
  EXPECT_EQ(by_pid(*r, 28768).role, kRoleHelper);  // resource tracker
  EXPECT_EQ(by_pid(*r, 28768).owner, 5352);
  EXPECT_EQ(by_pid(*r, 28769).launcher, "multiprocessing.spawn");
}

TEST(Discover, PopenLauncherTree) {
  auto r = run("subprocess", {18643}, true);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(ranks_of(*r), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(by_pid(*r, 18643).role, kRoleLauncher);
  EXPECT_EQ(by_pid(*r, 18643).launcher, "ring_allreduce.py");
}

TEST(Discover, ForkTreeFromFilesHasNoRanks) {
  // Forked children keep the parent's command line and start environment: without the
  // memory environment nothing says they are ranks, and nothing is invented. They are the
  // parent's forked workers, the parent their owner.
  auto r = run("fork", {18885}, true);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_TRUE(ranks_of(*r).empty());
  for (const auto& p : *r) {
    EXPECT_EQ(p.role, p.pid == 18885 ? kRoleOwner : kRoleWorker) << p.pid;
    EXPECT_EQ(p.owner, p.pid == 18885 ? std::nullopt : std::optional<int>(18885)) << p.pid;
  }
}

TEST(Discover, WithoutSubprocessesOnlyTheNamedPids) {
  auto r = run("openmpi", {17010, 17012, 17010}, false);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ(ranks_of(*r), (std::vector<int>{1, 3}));
}

TEST(Discover, SkipsHangscanKernelThreadsAndMissingPids) {
  std::vector<Diagnostic> diags;
  auto r = run("openmpi", {16997, 2, 424242}, true, {}, &diags, 17010);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ranks_of(*r), (std::vector<int>{0, 2, 3}));
  ASSERT_EQ(diags.size(), 3u);
  auto diag_of = [&](int pid) {
    for (const auto& d : diags)
      if (d.pid == pid) return d;
    return Diagnostic{};
  };
  EXPECT_NE(diag_of(2).message.find("kernel thread"), std::string::npos);
  EXPECT_EQ(diag_of(424242).severity, Diagnostic::Severity::error);
  EXPECT_NE(diag_of(424242).message.find("no such process"), std::string::npos);
  EXPECT_NE(diag_of(17010).message.find("hangscan itself"), std::string::npos);
}

TEST(Discover, MatchExcludesHangscanAndItsAncestors) {
  // hangscan (pretending to be rank 1) would match its own pattern, and so would mpirun above it.
  auto r = run("openmpi", {}, false, "mpi_hang", nullptr, 17010);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ranks_of(*r), (std::vector<int>{0, 2, 3}));
}

TEST(Discover, NothingToCapture) {
  std::vector<Diagnostic> diags;
  auto none = run("openmpi", {}, false, "no-such-program-xyz", &diags);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, Errc::not_found);
  EXPECT_EQ(diags.size(), 1u);
  auto kthread = run("openmpi", {2}, false);
  ASSERT_FALSE(kthread.ok());
  auto bad = run("openmpi", {}, false, "(");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::usage);
}

TEST(ApplyRankInfo, KeepsDiscoveredRoleAndTakesTheCurrentEnvironment) {
  DiscoveredProcess d;
  d.pid = 10;
  d.role = kRoleRank;
  d.launcher = "multiprocessing.spawn";
  ProcessSnapshot p;
  apply_rank_info(p, {"RANK=2", "WORLD_SIZE=4", "LOCAL_RANK=2"}, &d);
  EXPECT_EQ(p.role, kRoleRank);
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.world_size, 4);
  EXPECT_EQ(p.local_rank, 2);
  EXPECT_EQ(p.launcher, "multiprocessing.spawn");

  // A helper keeps no rank even though it inherited RANK.
  d.role = kRoleHelper;
  apply_rank_info(p, {"RANK=2", "WORLD_SIZE=4"}, &d);
  EXPECT_EQ(p.role, kRoleHelper);
  EXPECT_EQ(p.rank, std::nullopt);

  // A process whose environment now carries a rank is a rank.
  d.role = kRoleProcess;
  d.launcher.clear();
  apply_rank_info(p, {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2"}, &d);
  EXPECT_EQ(p.role, kRoleRank);
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.launcher, "mpirun");
}

TEST(ApplyRankInfo, AloneFromCommandLineAndEnvironment) {
  ProcessSnapshot p;
  p.cmdline = {"/usr/bin/python3", "/usr/bin/torchrun", "x.py"};
  apply_rank_info(p, {"SLURM_PROCID=0", "SLURM_NTASKS=2"});
  EXPECT_EQ(p.role, kRoleLauncher);
  EXPECT_EQ(p.launcher, "torchrun");
  EXPECT_EQ(p.rank, std::nullopt);

  p.cmdline = {"./sim"};
  apply_rank_info(p, {"SLURM_PROCID=1", "SLURM_NTASKS=2"});
  EXPECT_EQ(p.role, kRoleRank);
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.world_size, 2);
  EXPECT_EQ(p.launcher, "srun");

  apply_rank_info(p, {"PATH=/bin"});
  EXPECT_EQ(p.role, kRoleProcess);
  EXPECT_EQ(p.rank, std::nullopt);
  EXPECT_TRUE(p.launcher.empty());
}

}  // namespace
}  // namespace hangscan
