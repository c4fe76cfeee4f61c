// ProcessTree and --match on process trees captured from real jobs
// (tests/unit/fixtures/proc/trees/, made by capture_tree.py), and on this machine's /proc.
#include "proc/process_tree.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace hangscan {
namespace {

const std::string kTrees = std::string(HS_FIXTURES) + "/proc/trees";

TEST(ProcessTree, ScansFixtureTree) {
  ProcessTree tree = ProcessTree::scan(kTrees + "/mpich");
  ASSERT_EQ(tree.entries().size(), 8u);
  const ProcessEntry* hydra = tree.find(17025);
  ASSERT_NE(hydra, nullptr);
  EXPECT_EQ(hydra->comm, "hydra_pmi_proxy");
  EXPECT_EQ(hydra->ppid, 17024);
  EXPECT_FALSE(hydra->kernel_thread);
  const ProcessEntry* kthreadd = tree.find(2);
  ASSERT_NE(kthreadd, nullptr);
  EXPECT_TRUE(kthreadd->kernel_thread);
  EXPECT_EQ(tree.find(424242), nullptr);
}

TEST(ProcessTree, ChildrenDescendantsAncestors) {
  ProcessTree tree = ProcessTree::scan(kTrees + "/mpich");
  EXPECT_EQ(tree.children(17024), (std::vector<int>{17025}));
  EXPECT_EQ(tree.descendants(17024), (std::vector<int>{17025, 17026, 17027, 17028, 17029}));
  EXPECT_EQ(tree.descendants(17029), std::vector<int>{});
  EXPECT_EQ(tree.ancestors(17027), (std::vector<int>{17025, 17024, 17022, 16985}));
  EXPECT_TRUE(tree.is_ancestor(17024, 17028));
  EXPECT_FALSE(tree.is_ancestor(17028, 17024));
}

TEST(ProcessTree, CyclesAndMissingParentsEnd) {
  ProcessTree tree({{1, 0, "init", 'S', false, 0},
                    {5, 6, "a", 'S', false, 0},
                    {6, 5, "b", 'S', false, 0},
                    {7, 5, "c", 'S', false, 0}});
  EXPECT_EQ(tree.ancestors(7), (std::vector<int>{5, 6}));
  EXPECT_EQ(tree.descendants(5), (std::vector<int>{6, 7}));
  EXPECT_EQ(tree.ancestors(1), std::vector<int>{});
}

TEST(ProcessTree, ReadsNulFiles) {
  auto argv = process_cmdline(17025, kTrees + "/mpich");
  ASSERT_FALSE(argv.empty());
  EXPECT_EQ(argv[0], "/usr/bin/hydra_pmi_proxy");
  auto env = process_environ_file(17028, kTrees + "/mpich");
  EXPECT_NE(std::find(env.begin(), env.end(), "PMI_RANK=2"), env.end());
  EXPECT_TRUE(process_cmdline(2, kTrees + "/mpich").empty());  // kernel thread
  EXPECT_TRUE(process_cmdline(424242, kTrees + "/mpich").empty());
  EXPECT_EQ(joined_cmdline({"a", "b c", "d"}), "a b c d");
}

TEST(MatchProcesses, LikePgrepF) {
  ProcessTree tree = ProcessTree::scan(kTrees + "/openmpi");
  auto all = match_processes(tree, "mpi_hang_openmpi", {}, kTrees + "/openmpi");
  ASSERT_TRUE(all.ok());
  // mpirun's command line names the program too.
  EXPECT_EQ(*all, (std::vector<int>{16997, 17009, 17010, 17011, 17012}));
  auto anchored =
      match_processes(tree, "^/[^ ]*/mpi_hang_(openmpi|mpich) ", {}, kTrees + "/openmpi");
  ASSERT_TRUE(anchored.ok());
  EXPECT_EQ(*anchored, (std::vector<int>{17009, 17010, 17011, 17012}));
  auto excluded = match_processes(tree, "mpi_hang", {16997, 17010}, kTrees + "/openmpi");
  ASSERT_TRUE(excluded.ok());
  EXPECT_EQ(*excluded, (std::vector<int>{17009, 17011, 17012}));
  auto none = match_processes(tree, "no-such-program-xyz", {}, kTrees + "/openmpi");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(MatchProcesses, InvalidRegexIsAUsageError) {
  ProcessTree tree = ProcessTree::scan(kTrees + "/openmpi");
  auto bad = match_processes(tree, "([unclosed", {}, kTrees + "/openmpi");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::usage);
  EXPECT_FALSE(bad.error().hint.empty());
}

TEST(ProcessTree, VanishedAndTruncatedEntriesAreSkipped) {
  // 4242 exited between the directory listing and reading its stat; 4243's stat is torn.
  ProcessTree tree = ProcessTree::scan(kTrees + "/vanished");
  ASSERT_EQ(tree.entries().size(), 1u);
  EXPECT_EQ(tree.entries()[0].pid, 17025);
  EXPECT_TRUE(ProcessTree::scan(kTrees + "/no-such-dir").entries().empty());
}

TEST(ProcessTree, LiveScanSeesThisProcessAndItsParent) {
  ProcessTree tree = ProcessTree::scan();
  const ProcessEntry* me = tree.find(getpid());
  ASSERT_NE(me, nullptr);
  EXPECT_EQ(me->ppid, getppid());
  auto anc = tree.ancestors(getpid());
  ASSERT_FALSE(anc.empty());
  EXPECT_EQ(anc.front(), getppid());
  EXPECT_EQ(anc.back(), 1);
  const ProcessEntry* kthreadd = tree.find(2);
  if (kthreadd != nullptr) {
    EXPECT_TRUE(kthreadd->kernel_thread);
  }
}

}  // namespace
}  // namespace hangscan
