// run_cluster_cores(): the --gcore core round of the cluster modes without a CLI or a cluster:
// which members are asked of which node, in what order, with which agent arguments, and how
// every answer (or its absence) comes back as one outcome per member.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "fanout/cluster_cores.h"
#include "fanout/core_round.h"
#include "util/diagnostic.h"

namespace hangscan {
namespace {

ProcessSnapshot member(const std::string& host, int pid, int rank) {
  ProcessSnapshot p;
  p.host = host;
  p.pid = pid;
  p.rank = rank;
  p.start_ticks = 1000 + static_cast<std::uint64_t>(pid);
  return p;
}

// Three nodes as asked: n1 holds ranks 0 and 1, 10.0.0.7 (whose agent calls itself gpu7)
// holds rank 2, n3 holds rank 3. Rank 2 is the suspect; ranks 0 and 1 form a group, 3 another.
struct Cluster {
  FanoutResult result;
  JobSnapshot merged;
  Analysis analysis;
  Cluster() {
    result.requested = {"n3", "10.0.0.7", "n1"};
    result.agent_nodes = {{"10.0.0.7", "gpu7"}, {"n1", "n1"}, {"n3", "n3"}};
    merged.processes = {member("n1", 10, 0), member("n1", 11, 1), member("10.0.0.7", 70, 2),
                        member("n3", 30, 3)};
    analysis.groups.resize(2);
    analysis.groups[0].members = {0, 1};
    analysis.groups[1].members = {3};
    analysis.group_of = {0, 0, Analysis::kNoGroup, 1};
    analysis.suspect_members = {2};
  }
};

struct RecordedRound {
  std::vector<std::string> nodes;
  std::vector<std::string> args;
  int calls = 0;
};

TEST(ClusterCores, AsksOnlyTheNodesHoldingPickedMembers) {
  Cluster c;
  RecordedRound seen;
  CoreOutcome suspect{.node = "gpu7", .pid = 70, .rank = 2, .path = "/c/core.gpu7.rank2.70"};
  suspect.file_size = 4096;
  auto round = [&](const std::vector<std::string>& nodes, const std::vector<std::string>& args) {
    ++seen.calls;
    seen.nodes = nodes;
    seen.args = args;
    AgentAnswers a;
    a.requested = nodes;
    a.documents = {{"10.0.0.7", "gpu7", write_core_outcomes_json("gpu7", {suspect})}};
    a.unreachable = {{"n1", "no answer within 30 s"}};
    a.log = {"srun ... (1.2 s)"};
    a.elapsed = std::chrono::milliseconds(1500);
    return a;
  };
  auto cores = run_cluster_cores(c.result, c.merged, c.analysis,
                                 JobCoresRequest{"suspects", "/scratch/cores/", 1u << 30}, round);
  ASSERT_TRUE(cores.ok()) << cores.error().what();
  EXPECT_EQ(seen.calls, 1);
  EXPECT_EQ(seen.nodes, (std::vector<std::string>{"10.0.0.7"}));
  EXPECT_EQ(seen.args,
            (std::vector<std::string>{"--gcore-dir", "/scratch/cores", "--gcore-max-size",
                                      "1073741824", "--write-core", "gpu7:70:2@1070"}));
  ASSERT_EQ(cores->outcomes.size(), 1u);
  EXPECT_EQ(cores->roles, (std::vector<std::string>{"suspect"}));
  EXPECT_TRUE(cores->outcomes[0].written());
  EXPECT_EQ(cores->outcomes[0].node, "10.0.0.7");
  EXPECT_EQ(cores->outcomes[0].path, "/c/core.gpu7.rank2.70");
  EXPECT_EQ(cores->written(), 1u);
  EXPECT_EQ(cores->dir, "/scratch/cores");
  EXPECT_EQ(cores->nodes, 1u);
  EXPECT_EQ(cores->elapsed, std::chrono::milliseconds(1500));
  EXPECT_EQ(cores->log, (std::vector<std::string>{"srun ... (1.2 s)"}));
}

TEST(ClusterCores, OnePerGroupInTheOrderAskedWithReasonsForTheSilent) {
  Cluster c;
  RecordedRound seen;
  auto round = [&](const std::vector<std::string>& nodes, const std::vector<std::string>& args) {
    seen.nodes = nodes;
    seen.args = args;
    AgentAnswers a;
    a.requested = nodes;
    a.documents = {{"n1", "n1", write_core_outcomes_json("n1", {})}};
    a.unreachable = {{"n3", "no answer within 30 s"}};
    a.diagnostics = {make_diagnostic(Diagnostic::Severity::warning, "srun: step failed")};
    return a;
  };
  auto cores =
      run_cluster_cores(c.result, c.merged, c.analysis, JobCoresRequest{"", "/cores", 4096}, round);
  ASSERT_TRUE(cores.ok()) << cores.error().what();
  // Members 0 (representative of ranks 0-1), 2 (suspect), 3 (representative of rank 3).
  EXPECT_EQ(seen.nodes, (std::vector<std::string>{"n3", "10.0.0.7", "n1"}));
  EXPECT_EQ(seen.args,
            (std::vector<std::string>{"--gcore-dir", "/cores", "--gcore-max-size", "4096",
                                      "--write-core", "n1:10:0@1010", "--write-core",
                                      "gpu7:70:2@1070", "--write-core", "n3:30:3@1030"}));
  EXPECT_EQ(cores->roles,
            (std::vector<std::string>{"representative", "suspect", "representative"}));
  ASSERT_EQ(cores->outcomes.size(), 3u);
  EXPECT_EQ(cores->written(), 0u);
  EXPECT_EQ(cores->outcomes[0].error, "the agent on n1 did not mention pid 10 of node n1");
  EXPECT_EQ(cores->outcomes[1].error, "node 10.0.0.7 did not answer: no answer");
  EXPECT_EQ(cores->outcomes[2].error, "node n3 did not answer: no answer within 30 s");
  ASSERT_EQ(cores->diagnostics.size(), 1u);
  EXPECT_EQ(cores->diagnostics[0].message, "srun: step failed");
  EXPECT_EQ(cores->nodes, 3u);
}

TEST(ClusterCores, NothingPickedRunsNoRoundAndABadModeIsAUsageError) {
  Cluster c;
  c.analysis.suspect_members.clear();
  int calls = 0;
  auto round = [&](const std::vector<std::string>&, const std::vector<std::string>&) {
    ++calls;
    return AgentAnswers{};
  };
  auto none = run_cluster_cores(c.result, c.merged, c.analysis,
                                JobCoresRequest{"suspects", "/cores", 4096}, round);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->outcomes.empty());
  EXPECT_EQ(calls, 0);
  auto bad = run_cluster_cores(c.result, c.merged, c.analysis,
                               JobCoresRequest{"most", "/cores", 4096}, round);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::usage);
  EXPECT_EQ(bad.error().what(), "--gcore most: not a mode");
  EXPECT_EQ(calls, 0);
}

TEST(ClusterCores, AbsoluteCoreDir) {
  EXPECT_EQ(absolute_core_dir("/x/"), "/x");
  EXPECT_EQ(absolute_core_dir("/x/./y/../z"), "/x/z");
  EXPECT_EQ(absolute_core_dir("/"), "/");
  EXPECT_EQ(absolute_core_dir("cores"),
            (std::filesystem::current_path() / "cores").lexically_normal().string());
}

}  // namespace
}  // namespace hangscan
