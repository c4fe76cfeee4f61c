// Rank, world size, launcher and role decisions on environments and command lines that real
// launchers produce (values copied from torchrun, Open MPI 4.1, MPICH 4.0 and Slurm ranks).
#include "proc/rank_info.h"

#include <gtest/gtest.h>

namespace hangscan {
namespace {

using Env = std::vector<std::string>;
using Argv = std::vector<std::string>;

TEST(RankInfo, EnvValueLastDefinitionWins) {
  Env env = {"A=1", "AB=2", "A=3", "B"};
  EXPECT_EQ(env_value(env, "A"), "3");
  EXPECT_EQ(env_value(env, "AB"), "2");
  EXPECT_EQ(env_value(env, "B"), std::nullopt);
  EXPECT_EQ(env_value(env, "C"), std::nullopt);
}

TEST(RankInfo, TorchrunVariables) {
  Env env = {"PATH=/usr/bin",  "LOCAL_RANK=1",  "RANK=5",
             "GROUP_RANK=1",   "WORLD_SIZE=8",  "TORCHELASTIC_RUN_ID=none",
             "SLURM_PROCID=1", "SLURM_NTASKS=2"};
  RankInfo r = rank_from_environment(env);
  EXPECT_EQ(r.rank, 5);  // RANK beats SLURM_PROCID (the node's task index under torchrun)
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.launcher, "torchrun");
  EXPECT_EQ(r.rank_source, "RANK");
}

TEST(RankInfo, OpenMpiVariables) {
  Env env = {"OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_SIZE=4", "PMIX_RANK=2",
             "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_LOCAL_RANK=2"};
  RankInfo r = rank_from_environment(env);
  EXPECT_EQ(r.rank, 2);
  EXPECT_EQ(r.world_size, 4);
  EXPECT_EQ(r.local_rank, 2);
  EXPECT_EQ(r.launcher, "mpirun");
  EXPECT_EQ(r.rank_source, "OMPI_COMM_WORLD_RANK");
}

TEST(RankInfo, MpichHydraVariables) {
  Env env = {"MPI_LOCALNRANKS=4", "MPI_LOCALRANKID=3", "PMI_RANK=3", "PMI_FD=17", "PMI_SIZE=4"};
  RankInfo r = rank_from_environment(env);
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.world_size, 4);
  EXPECT_EQ(r.local_rank, 3);
  EXPECT_EQ(r.launcher, "mpirun");
}

TEST(RankInfo, SlurmVariables) {
  Env env = {"SLURM_JOB_ID=12", "SLURM_STEP_ID=0", "SLURM_PROCID=7", "SLURM_LOCALID=3",
             "SLURM_NTASKS=16"};
  RankInfo r = rank_from_environment(env);
  EXPECT_EQ(r.rank, 7);
  EXPECT_EQ(r.world_size, 16);
  EXPECT_EQ(r.local_rank, 3);
  EXPECT_EQ(r.launcher, "srun");
  // Older Slurm: SLURM_NPROCS only.
  EXPECT_EQ(rank_from_environment({"SLURM_PROCID=1", "SLURM_NPROCS=2"}).world_size, 2);
}

TEST(RankInfo, PmixUnderSrun) {
  Env env = {"PMIX_RANK=4", "SLURM_STEP_ID=3", "SLURM_NTASKS=8"};
  RankInfo r = rank_from_environment(env);
  EXPECT_EQ(r.rank, 4);
  EXPECT_EQ(r.world_size, std::nullopt);  // sizes of another family are not this one's
  EXPECT_EQ(r.launcher, "srun");
}

TEST(RankInfo, MalformedNumbersAreIgnored) {
  EXPECT_FALSE(rank_from_environment({"RANK=", "WORLD_SIZE=4"}).has_rank());
  EXPECT_FALSE(rank_from_environment({"RANK=two"}).has_rank());
  EXPECT_FALSE(rank_from_environment({"RANK=-1"}).has_rank());
  EXPECT_FALSE(rank_from_environment({"RANK=99999999999999999999"}).has_rank());
  // A bad RANK falls through to the next family.
  RankInfo r = rank_from_environment({"RANK=x", "PMI_RANK=1", "PMI_SIZE=0"});
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.world_size, std::nullopt);  // a size of 0 is no size
}

TEST(RankInfo, LocalRankWithoutRank) {
  RankInfo r = rank_from_environment({"LOCAL_RANK=2"});
  EXPECT_FALSE(r.has_rank());
  EXPECT_EQ(r.local_rank, 2);
  EXPECT_TRUE(rank_from_environment({}).launcher.empty());
}

TEST(ClassifyCmdline, Launchers) {
  auto launcher = [](Argv argv, std::string_view comm = {}) {
    CmdlineClass c = classify_cmdline(argv, comm);
    return c.kind == CmdlineKind::launcher ? c.launcher : std::string("-");
  };
  EXPECT_EQ(launcher({"/usr/bin/python3.11", "/usr/bin/torchrun", "--standalone", "x.py"}),
            "torchrun");
  EXPECT_EQ(launcher({"torchrun", "--nproc_per_node", "4", "x.py"}), "torchrun");
  EXPECT_EQ(launcher({"python3", "-m", "torch.distributed.run", "x.py"}), "torchrun");
  EXPECT_EQ(launcher({"python", "-u", "-m", "torch.distributed.launch", "x.py"}),
            "torch.distributed.launch");
  EXPECT_EQ(
      launcher({"/usr/bin/python3", "-u", "-m", "deepspeed.launcher.launch", "--world_info=e30="}),
      "deepspeed");
  EXPECT_EQ(launcher({"/usr/local/bin/python3", "/usr/local/bin/deepspeed", "train.py"}),
            "deepspeed");
  EXPECT_EQ(launcher({"/usr/bin/python3", "/usr/local/bin/accelerate", "launch", "t.py"}),
            "accelerate");
  EXPECT_EQ(launcher({"mpirun.openmpi", "--allow-run-as-root", "-np", "4", "a.out"}), "mpirun");
  EXPECT_EQ(launcher({"mpiexec", "-n", "2", "a.out"}), "mpirun");
  EXPECT_EQ(launcher({"/usr/bin/mpiexec.hydra", "-np", "4", "a.out"}), "mpirun");
  EXPECT_EQ(launcher({"/usr/bin/hydra_pmi_proxy", "--control-port", "vm:38181"}), "mpirun");
  EXPECT_EQ(launcher({"orted", "-mca", "ess", "env"}), "mpirun");
  EXPECT_EQ(launcher({"prterun", "-np", "2", "a.out"}), "mpirun");
  EXPECT_EQ(launcher({"srun", "-N", "2", "a.out"}), "srun");
  EXPECT_EQ(launcher({"slurmstepd: [12.0]"}), "srun");
  EXPECT_EQ(launcher({}, "slurmstepd"), "srun");
  // Not launchers: the rank's own program, an unrelated python script.
  EXPECT_EQ(launcher({"/usr/bin/python3.11", "-u", "train.py"}), "-");
  EXPECT_EQ(launcher({"./mpi_hang_openmpi", "/tmp/ctl", "2"}), "-");
  EXPECT_EQ(launcher({"python3", "-c", "import torch"}), "-");
}

TEST(ClassifyCmdline, MultiprocessingChildrenAndHelpers) {
  CmdlineClass spawn = classify_cmdline(
      {"/usr/bin/python3", "-B", "-c",
       "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=7, pipe_handle=9)",
       "--multiprocessing-fork"});
  EXPECT_EQ(spawn.kind, CmdlineKind::spawn_child);
  CmdlineClass tracker =
      classify_cmdline({"/usr/bin/python3", "-B", "-c",
                        "from multiprocessing.resource_tracker import main;main(6)"});
  EXPECT_EQ(tracker.kind, CmdlineKind::helper);
  EXPECT_EQ(tracker.what, "resource tracker");
  CmdlineClass fs = classify_cmdline(
      {"python3", "-c",
       "from multiprocessing.forkserver import main; main(5, 6, ['__main__'], **{})"});
  EXPECT_EQ(fs.kind, CmdlineKind::helper);
  EXPECT_EQ(fs.what, "forkserver");
  CmdlineClass compile = classify_cmdline(
      {"/usr/bin/python3",
       "/usr/lib/python3/dist-packages/torch/_inductor/compile_worker/__main__.py", "--workers=8"});
  EXPECT_EQ(compile.kind, CmdlineKind::helper);
  EXPECT_EQ(compile.what, "compile worker");
  EXPECT_EQ(classify_cmdline({"python3", "-m", "torch._inductor.compile_worker"}).kind,
            CmdlineKind::helper);
}

ProcessFacts facts(int pid, int ppid, Argv argv, Env env = {}) {
  ProcessFacts f;
  f.pid = pid;
  f.ppid = ppid;
  f.cmdline = std::move(argv);
  f.comm = f.cmdline.empty() ? "" : f.cmdline[0];
  f.environment = std::move(env);
  return f;
}

const RoleDecision& role_of(const std::vector<RoleDecision>& roles, int pid) {
  for (const auto& r : roles)
    if (r.pid == pid) return r;
  throw std::runtime_error("no such pid");
}

TEST(AssignRoles, TorchrunWithDataloaderWorkersAndTracker) {
  Argv rank_argv = {"/usr/bin/python3", "-u", "train.py"};
  std::vector<ProcessFacts> procs = {
      facts(100, 1, {"/usr/bin/python3", "/usr/bin/torchrun", "--nproc_per_node", "2", "train.py"},
            {"SLURM_PROCID=0"}),
      facts(101, 100, rank_argv,
            {"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "TORCHELASTIC_RUN_ID=x"}),
      facts(102, 100, rank_argv,
            {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "TORCHELASTIC_RUN_ID=x"}),
      // Forked dataloader workers inherit RANK.
      facts(103, 101, rank_argv, {"RANK=0", "WORLD_SIZE=2"}),
      facts(104, 103, rank_argv, {"RANK=0", "WORLD_SIZE=2"}),
      facts(
          105, 100,
          {"/usr/bin/python3", "-c", "from multiprocessing.resource_tracker import main;main(6)"}),
  };
  auto roles = assign_roles(procs);
  EXPECT_EQ(role_of(roles, 100).role, kRoleLauncher);  // despite SLURM_PROCID
  EXPECT_EQ(role_of(roles, 100).launcher, "torchrun");
  EXPECT_EQ(role_of(roles, 101).role, kRoleRank);
  EXPECT_EQ(role_of(roles, 101).rank.rank, 0);
  EXPECT_EQ(role_of(roles, 101).launcher, "torchrun");
  EXPECT_EQ(role_of(roles, 102).rank.rank, 1);
  EXPECT_EQ(role_of(roles, 102).rank.world_size, 2);
  EXPECT_EQ(role_of(roles, 103).role, kRoleHelper);
  EXPECT_EQ(role_of(roles, 103).owner, 101);
  EXPECT_FALSE(role_of(roles, 103).rank.has_rank());
  EXPECT_EQ(role_of(roles, 104).role, kRoleHelper);
  EXPECT_EQ(role_of(roles, 104).owner, 101);
  EXPECT_EQ(role_of(roles, 105).role, kRoleHelper);
  EXPECT_EQ(role_of(roles, 105).owner, 100);
  EXPECT_EQ(role_of(roles, 105).launcher, "torchrun");
}

TEST(AssignRoles, SpawnChildrenWithoutRankVariablesAreRanksOfUnknownNumber) {
  Argv child = {
      "/usr/bin/python3", "-B", "-c",
      "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=8, pipe_handle=10)",
      "--multiprocessing-fork"};
  std::vector<ProcessFacts> procs = {
      facts(10, 1, {"/usr/bin/python3", "train.py"}),
      facts(11, 10, child),
      facts(12, 10, child, {"RANK=1", "WORLD_SIZE=2"}),
      // A spawn-context dataloader worker of rank 12.
      facts(13, 12, child),
  };
  auto roles = assign_roles(procs);
  EXPECT_EQ(role_of(roles, 10).role, kRoleLauncher);
  EXPECT_EQ(role_of(roles, 10).launcher, "multiprocessing.spawn");
  EXPECT_EQ(role_of(roles, 11).role, kRoleRank);
  EXPECT_FALSE(role_of(roles, 11).rank.has_rank());
  EXPECT_EQ(role_of(roles, 11).launcher, "multiprocessing.spawn");
  EXPECT_EQ(role_of(roles, 12).rank.rank, 1);
  EXPECT_EQ(role_of(roles, 13).role, kRoleHelper);
  EXPECT_EQ(role_of(roles, 13).owner, 12);
}

TEST(AssignRoles, SiblingOfRanksIsARank) {
  Argv prog = {"./a.out"};
  std::vector<ProcessFacts> procs = {
      facts(20, 1, {"bash", "run.sh"}),
      facts(21, 20, prog, {"PMI_RANK=0", "PMI_SIZE=3"}),
      facts(22, 20, prog, {"PMI_RANK=1", "PMI_SIZE=3"}),
      facts(23, 20, prog, {}),
  };
  auto roles = assign_roles(procs);
  EXPECT_EQ(role_of(roles, 23).role, kRoleRank);
  EXPECT_FALSE(role_of(roles, 23).rank.has_rank());
  EXPECT_EQ(role_of(roles, 23).reason, "sibling of ranks");
  EXPECT_EQ(role_of(roles, 20).role, kRoleLauncher);  // a script that started ranks
  EXPECT_EQ(role_of(roles, 21).launcher, "run.sh");
}

TEST(AssignRoles, ForkserverWorkersAreNotTheForkserver) {
  Argv fs = {"python3", "-c",
             "from multiprocessing.forkserver import main; main(5, 6, ['__main__'])"};
  std::vector<ProcessFacts> procs = {
      facts(30, 1, {"python3", "train.py"}),
      facts(31, 30, fs),
      facts(32, 31, fs, {"RANK=0", "WORLD_SIZE=2"}),
      facts(33, 31, fs, {"RANK=1", "WORLD_SIZE=2"}),
  };
  auto roles = assign_roles(procs);
  EXPECT_EQ(role_of(roles, 31).role, kRoleHelper);
  EXPECT_EQ(role_of(roles, 31).reason, "forkserver");
  EXPECT_EQ(role_of(roles, 32).role, kRoleRank);
  EXPECT_EQ(role_of(roles, 33).rank.rank, 1);
}

TEST(AssignRoles, SlurmStepAndPlainProcesses) {
  std::vector<ProcessFacts> procs = {
      facts(40, 1, {"slurmstepd: [7.0]"}),
      facts(41, 40, {"./sim"}, {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_STEP_ID=0"}),
      facts(42, 40, {"./sim"}, {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_STEP_ID=0"}),
      facts(43, 41, {"/bin/sh", "-c", "date"}),
      facts(50, 1, {"sleep", "100"}),
  };
  auto roles = assign_roles(procs);
  EXPECT_EQ(role_of(roles, 40).role, kRoleLauncher);
  EXPECT_EQ(role_of(roles, 41).launcher, "srun");
  EXPECT_EQ(role_of(roles, 42).rank.world_size, 2);
  EXPECT_EQ(role_of(roles, 43).role, kRoleHelper);
  EXPECT_EQ(role_of(roles, 43).owner, 41);
  EXPECT_EQ(role_of(roles, 50).role, kRoleProcess);
  EXPECT_TRUE(role_of(roles, 50).launcher.empty());
}

TEST(AssignRoles, ForkedCopiesAreWorkersOfTheirOwner) {
  Argv pool = {"/usr/bin/python3", "pool.py"};
  ProcessFacts zombie = facts(73, 70, {});
  zombie.comm = "/usr/bin/python3";  // a zombie's command line is gone, its name is not
  std::vector<ProcessFacts> procs = {
      facts(70, 1, pool),
      facts(71, 70, pool),
      facts(72, 70, pool),
      zombie,
      facts(74, 70, {"/bin/sh", "-c", "date"}),  // exec'd: not a copy
  };
  auto roles = assign_roles(procs);
  EXPECT_EQ(role_of(roles, 70).role, kRoleOwner);
  for (int pid : {71, 72, 73}) {
    EXPECT_EQ(role_of(roles, pid).role, kRoleWorker) << pid;
    EXPECT_EQ(role_of(roles, pid).owner, 70) << pid;
  }
  EXPECT_EQ(role_of(roles, 74).role, kRoleProcess);
}

TEST(AssignRoles, CyclicParentLinksDoNotLoop) {
  std::vector<ProcessFacts> procs = {facts(60, 61, {"a"}, {"RANK=0"}),
                                     facts(61, 60, {"b"}, {"RANK=0"})};
  auto roles = assign_roles(procs);
  ASSERT_EQ(roles.size(), 2u);
}

}  // namespace
}  // namespace hangscan
