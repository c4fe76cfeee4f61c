// run_cluster_capture(): a whole cluster capture without a CLI or a cluster, through a fake
// launcher: the capture round gets the capture flags as agent arguments (--no-bpf included), the
// report comes before the core round, the core round runs only when asked, when the report was
// written and when a node answered, and a launcher that cannot plan runs no agent.
#include "fanout/cluster_capture.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "../group/job_builder.h"
#include "../logs/temp_dir.h"
#include "fanout/core_round.h"
#include "report/agent_format.h"

namespace hangscan {
namespace {

// Rank `rank` as pid `pid` on `host`, as its node's agent sends it.
JobSnapshot rank_on(const std::string& host, int pid, int rank) {
  JobSnapshot job;
  job.processes.push_back(testing::rank_process(rank, pid, {}, 'S', host));
  job.processes.back().start_ticks = 500;
  return job;
}

// Plans n1 and n2; n1 answers with rank 0, n2 not at all. Records every round's arguments.
class FakeLauncher : public Launcher {
 public:
  bool plan_fails = false;
  mutable std::vector<std::vector<std::string>> rounds;  // agent arguments of each round
  mutable std::vector<std::string> events;               // "capture", "cores" in order

  Result<LaunchPlan> plan() override {
    if (plan_fails) return Error(Errc::usage, "no such job");
    return LaunchPlan{"7", 2, {"n1", "n2"}, "2 nodes"};
  }
  AgentAnswers run_agents(const std::vector<std::string>& nodes,
                          const std::vector<std::string>& args,
                          const AnswerWatch& /*watch*/) const override {
    rounds.push_back(args);
    AgentAnswers a;
    a.requested = nodes;
    if (rounds.size() == 1) {
      events.emplace_back("capture");
      a.documents = {{"n1", "n1", write_agent_json(rank_on("n1", 41, 0))}};
      a.unreachable = {{"n2", "no answer within 30 s"}};
    } else {
      events.emplace_back("cores");
      CoreOutcome c{.node = "n1", .pid = 41, .rank = 0, .path = "/c/core.n1.rank0.41"};
      c.file_size = 4096;
      a.documents = {{"n1", "n1", write_core_outcomes_json("n1", {c})}};
    }
    return a;
  }
};

ClusterHooks hooks_of(FakeLauncher& l, bool report_ok) {
  ClusterHooks h;
  h.report = [&l, report_ok](const ClusterOutcome&) {
    l.events.emplace_back("report");
    return report_ok;
  };
  return h;
}

TEST(ClusterCapture, CaptureReportThenCores) {
  FakeLauncher l;
  ClusterRequest r;
  r.capture.native = true;
  r.capture.no_bpf = true;
  r.cores = JobCoresRequest{"all", "/c", 1u << 20};
  auto out = run_cluster_capture(l, r, hooks_of(l, true));
  ASSERT_TRUE(out.ok()) << out.error().what();
  EXPECT_EQ(l.events, (std::vector<std::string>{"capture", "report", "cores"}));
  EXPECT_EQ(l.rounds[0], (std::vector<std::string>{"--unwinder", "libdw", "--native", "--no-bpf"}));
  EXPECT_EQ(out->plan.job_id, "7");
  ASSERT_EQ(out->run.merged.processes.size(), 1u);
  EXPECT_EQ(out->run.merged.processes[0].host, "n1");
  ASSERT_EQ(out->run.result.unreachable.size(), 1u);
  EXPECT_EQ(out->run.result.unreachable[0].host, "n2");
  ASSERT_TRUE(out->cores.has_value());
  ASSERT_TRUE(out->cores->ok()) << out->cores->error().what();
  ASSERT_EQ((*out->cores)->outcomes.size(), 1u);
  EXPECT_EQ((*out->cores)->outcomes[0].path, "/c/core.n1.rank0.41");
}

TEST(ClusterCapture, NoCoreRoundWithoutReportOrRequest) {
  FakeLauncher failed_report;
  ClusterRequest r;
  r.cores = JobCoresRequest{"all", "/c", 1u << 20};
  auto out = run_cluster_capture(failed_report, r, hooks_of(failed_report, false));
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->cores.has_value());
  EXPECT_EQ(failed_report.events, (std::vector<std::string>{"capture", "report"}));

  FakeLauncher not_asked;
  auto plain = run_cluster_capture(not_asked, ClusterRequest{}, hooks_of(not_asked, true));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->cores.has_value());
  EXPECT_EQ(not_asked.rounds.size(), 1u);
}

TEST(ClusterCapture, APlanThatFailsRunsNoAgent) {
  FakeLauncher l;
  l.plan_fails = true;
  auto out = run_cluster_capture(l, ClusterRequest{}, hooks_of(l, true));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, Errc::usage);
  EXPECT_TRUE(l.rounds.empty());
}

// The analysis is the library's: a bad grouping option ends the run after the capture round
// with its Error (no report), and the logs' problems come back as data, the pods' logs included.
TEST(ClusterCapture, AnalysisAndLogsAsData) {
  FakeLauncher bad;
  ClusterRequest r;
  r.group.threads = GroupOptions::Threads::matching;
  r.group.thread_regex = "(";
  auto refused = run_cluster_capture(bad, r, hooks_of(bad, true));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Errc::usage);
  EXPECT_FALSE(refused.error().hint.empty());
  EXPECT_EQ(bad.events, (std::vector<std::string>{"capture"}));

  // The pods' logs (k8s --pod-logs --pod-log-file) through a kubectl that has n1's log but
  // not its file: the log joined, the file a problem, the calls kept for -v.
  TempDir bin;
  bin.file(
      "kubectl",
      "#!/bin/sh\n"
      "if [ \"$1\" = logs ]; then printf '2026-11-28T08:00:00Z [rank0]: step 5\\n'; exit 0; fi\n"
      "echo 'error: file gone' >&2; exit 1\n");
  ::chmod((bin.path() + "/kubectl").c_str(), 0755);
  FakeLauncher l;
  ClusterRequest logs;
  logs.logs.paths = {"/nonexistent/hs-cluster-capture-test.log"};
  logs.pod_logs = PodLogOptions{};
  logs.pod_logs->kubectl = bin.path() + "/kubectl";
  logs.pod_logs->container_log = true;
  logs.pod_logs->files = {"/logs/train.log"};
  auto out = run_cluster_capture(l, logs, hooks_of(l, true));
  ASSERT_TRUE(out.ok()) << out.error().what();
  EXPECT_EQ(out->log_problems,
            (std::vector<LogProblem>{
                {"/nonexistent/hs-cluster-capture-test.log", "No such file or directory"},
                {"n1:/logs/train.log", "kubectl exec tail: error: file gone"}}));
  ASSERT_EQ(out->log_commands.size(), 2u);
  EXPECT_TRUE(out->log_commands[0].starts_with(bin.path() +
                                               "/kubectl logs n1 --tail=20000 --timestamps -> "
                                               "exit 0 in "))
      << out->log_commands[0];
  ASSERT_EQ(out->analysis.last_logs.size(), 1u);
}

// --output DIR is the library's: a refused directory ends the run before the plan (no node is
// asked), an accepted one gets every file after the report, and a file that cannot be written
// comes back as data and stops the core round.
TEST(ClusterCapture, OutputDirOpenedFirstAndWrittenAsData) {
  TempDir dir;
  FakeLauncher refused;
  ClusterRequest r;
  dir.file("plain", "not a directory\n");
  r.output = RunOutputRequest{dir.path() + "/plain/sub", {}, *find_report_writer("json"), {}};
  auto no = run_cluster_capture(refused, r, hooks_of(refused, true));
  ASSERT_FALSE(no.ok());
  EXPECT_EQ(no.error().code, Errc::usage);
  EXPECT_EQ(no.error().what(),
            "cannot open --output " + dir.path() + "/plain/sub: Not a directory");
  EXPECT_TRUE(refused.events.empty());

  FakeLauncher l;
  r.output->dir = dir.path();
  r.cores = JobCoresRequest{"all", "/c", 1u << 20};
  auto out = run_cluster_capture(l, r, hooks_of(l, true));
  ASSERT_TRUE(out.ok()) << out.error().what();
  ASSERT_TRUE(out->output.has_value());
  EXPECT_EQ(out->output->written, (std::vector<std::string>{"n1.txt", "n2.txt", "report.txt",
                                                            "report.html", "report.json"}));
  EXPECT_TRUE(out->output->failed.empty());
  EXPECT_EQ(l.events, (std::vector<std::string>{"capture", "report", "cores"}));
  std::ifstream n2(dir.path() + "/n2.txt");
  std::string line;
  std::getline(n2, line);
  EXPECT_EQ(line, "node n2 unreachable: no answer within 30 s");

  FakeLauncher blocked;
  ::unlink((dir.path() + "/report.txt").c_str());
  ::mkdir((dir.path() + "/report.txt").c_str(), 0755);  // not a file: cannot be replaced
  auto partly = run_cluster_capture(blocked, r, hooks_of(blocked, true));
  ASSERT_TRUE(partly.ok()) << partly.error().what();
  EXPECT_EQ(partly->output->written,
            (std::vector<std::string>{"n1.txt", "n2.txt", "report.html", "report.json"}));
  ASSERT_EQ(partly->output->failed.size(), 1u);
  EXPECT_EQ(partly->output->failed[0].what(),
            "cannot write " + dir.path() + "/report.txt: Is a directory");
  EXPECT_FALSE(partly->cores.has_value());
  EXPECT_EQ(blocked.events, (std::vector<std::string>{"capture", "report"}));
}

}  // namespace
}  // namespace hangscan
