// The core round of --gcore: request syntax, the answer document (and hostile versions of
// it), pairing answers with requests, and the agent's check that a pid is still the job's.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fanout/agent.h"
#include "fanout/agent_framing.h"
#include "fanout/collector.h"
#include "fanout/core_round.h"
#include "report/agent_format.h"

namespace hangscan {
namespace {

TEST(CoreRequest, FormatAndParse) {
  EXPECT_EQ(format_core_request({"n2", 1234, 3}), "n2:1234:3");
  EXPECT_EQ(format_core_request({"gpu-7.site", 99, std::nullopt}), "gpu-7.site:99");
  EXPECT_EQ(format_core_request({"n2", 1234, 3, 81234}), "n2:1234:3@81234");
  EXPECT_EQ(format_core_request({"n2", 1234, std::nullopt, 7}), "n2:1234@7");
  for (const CoreRequest& c :
       {CoreRequest{"n2", 1234, 3, 81234}, CoreRequest{"n2", 1234, std::nullopt, 7}}) {
    auto back = parse_core_request(format_core_request(c));
    ASSERT_TRUE(back.ok()) << format_core_request(c);
    EXPECT_EQ(*back, c);
  }
  auto r = parse_core_request("n2:1234:3");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (CoreRequest{"n2", 1234, 3}));
  auto no_rank = parse_core_request("10.0.0.7:42");
  ASSERT_TRUE(no_rank.ok());
  EXPECT_EQ(*no_rank, (CoreRequest{"10.0.0.7", 42, std::nullopt}));
  for (const char* bad : {"n2", "n2:", "n2:0", "n2:-4", "n2:12x", "n2:12:", "n2:12:-1", "n2:12:3:4",
                          ":12", "n2;reboot:12", "-n2:12", "n2:99999999999", "n2:12@", "n2:12@0",
                          "n2:12@-5", "n2:12:3@x", "n2:12@5@6", "@5"}) {
    auto e = parse_core_request(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.error().code, Errc::usage) << bad;
    EXPECT_EQ(e.error().hint, "give NODE:PID or NODE:PID:RANK, optionally followed by @START");
  }
  EXPECT_EQ(parse_core_request("n2:12@0").error().what(),
            "--write-core 'n2:12@0': the start time after '@' is not a positive number");
  EXPECT_EQ(parse_core_request("n2:0").error().what(),
            "--write-core 'n2:0': the pid is not a positive number");
}

TEST(CoreRequest, AgentArguments) {
  auto args =
      core_round_agent_args({{"n1", 10, 0}, {"n2", 20, std::nullopt}}, "/scratch/cores", "1G");
  EXPECT_EQ(args,
            (std::vector<std::string>{"--gcore-dir", "/scratch/cores", "--gcore-max-size", "1G",
                                      "--write-core", "n1:10:0", "--write-core", "n2:20"}));
}

std::vector<CoreOutcome> two_outcomes() {
  CoreOutcome ok;
  ok.node = "n2";
  ok.pid = 1234;
  ok.rank = 3;
  ok.path = "/scratch/core.n2.rank3.1234";
  ok.file_size = 5u << 20;
  ok.pause_us = 4100;
  ok.warnings = {"thread 1240 left out of the core: gone"};
  CoreOutcome gone;
  gone.node = "n2";
  gone.pid = 1240;
  gone.error = "pid 1240 is gone: it exited after the capture";
  gone.hint = "the report above shows where it was";
  return {ok, gone};
}

TEST(CoreOutcomes, DocumentRoundTrip) {
  std::string doc = write_core_outcomes_json("n2", two_outcomes());
  auto back = read_core_outcomes_json(doc);
  ASSERT_TRUE(back.ok()) << back.error().what();
  ASSERT_EQ(back->size(), 2u);
  const CoreOutcome& a = (*back)[0];
  EXPECT_TRUE(a.written());
  EXPECT_EQ(a.node, "n2");
  EXPECT_EQ(a.pid, 1234);
  EXPECT_EQ(a.rank, 3);
  EXPECT_EQ(a.path, "/scratch/core.n2.rank3.1234");
  EXPECT_EQ(a.file_size, 5u << 20);
  EXPECT_EQ(a.pause_us, 4100);
  EXPECT_EQ(a.warnings, (std::vector<std::string>{"thread 1240 left out of the core: gone"}));
  const CoreOutcome& b = (*back)[1];
  EXPECT_FALSE(b.written());
  EXPECT_EQ(b.rank, std::nullopt);
  EXPECT_EQ(b.error, "pid 1240 is gone: it exited after the capture");
  EXPECT_EQ(b.hint, "the report above shows where it was");
}

TEST(CoreOutcomes, HostileDocumentsAreErrorsNotCrashes) {
  const std::string big(5u << 20, ' ');
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::string long_path = std::string(5000, 'x');
  struct Case {
    std::string doc;
    std::string message;
  } cases[] = {
      {"{not json", "core answer: not valid JSON"},
      {"[]", "core answer: not an object"},
      {deep, "core answer: not an object"},
      {big, "core answer: larger than 4194304 bytes"},
      {R"({"schema":"hangscan-agent/1","cores":[]})",
       "core answer: schema is not hangscan-cores/1"},
      {R"({"schema":"hangscan-cores/1"})", "core answer: cores: missing"},
      {R"({"schema":"hangscan-cores/1","cores":[7]})",
       "core answer: cores[0]: expected an object, got number"},
      {R"({"schema":"hangscan-cores/1","cores":[{"node":"n1","pid":"12"}]})",
       "core answer: cores[0].pid: expected an integer, got string"},
      {R"({"schema":"hangscan-cores/1","cores":[{"node":"n1","pid":99999999999,"error":"x"}]})",
       "core answer: cores[0].pid: 99999999999 is out of range"},
      {R"({"schema":"hangscan-cores/1","cores":[{"node":"n1","pid":18446744073709551615,"error":"x"}]})",
       "core answer: cores[0].pid: 18446744073709551615 is out of range"},
      {R"({"schema":"hangscan-cores/1","cores":[{"node":"n;1","pid":3,"error":"x"}]})",
       "core answer: cores[0].node: not a host name"},
      {R"({"schema":"hangscan-cores/1","cores":[{"node":"n1","pid":3,"rank":-2,"error":"x"}]})",
       "core answer: cores[0].rank: -2 is out of range"},
      {R"({"schema":"hangscan-cores/1","cores":[{"node":"n1","pid":3}]})",
       "core answer: cores[0]: has neither a path nor an error"},
      {R"({"schema":"hangscan-cores/1","cores":[{"node":"n1","pid":3,"path":"/c","file_size":-1,"pause_us":0}]})",
       "core answer: cores[0].file_size: -1 is out of range"},
      {R"({"schema":"hangscan-cores/1","cores":[{"node":"n1","pid":3,"path":")" + long_path +
           R"("}]})",
       "core answer: cores[0].path: string of 5000 bytes, more than 4096"},
      {R"({"schema":"hangscan-cores/1","cores":[{"node":"n1","pid":3,"path":"/c","file_size":1,"pause_us":1,)"
       R"("warnings":[1]}]})",
       "core answer: cores[0].warnings[0]: expected a string, got number"},
  };
  for (const auto& c : cases) {
    auto r = read_core_outcomes_json(c.doc);
    ASSERT_FALSE(r.ok()) << c.doc.substr(0, 200);
    EXPECT_EQ(r.error().code, Errc::bad_data);
    EXPECT_EQ(r.error().what(), c.message) << c.doc.substr(0, 200);
  }
}

TEST(CoreOutcomes, PairedWithRequestsEvenWhenNodesFail) {
  // n1 answered for its core; the agent on 10.0.0.7 calls itself gpu7 (pdsh over ssh) and
  // answered; n3 never answered; n4 sent garbage; n5 answered without mentioning the pid.
  std::vector<CoreRequest> requests{
      {"n1", 10, 0}, {"gpu7", 70, 7}, {"n3", 30, 3}, {"n4", 40, 4}, {"n5", 50, 5}};
  std::vector<std::string> hosts{"n1", "10.0.0.7", "n3", "n4", "n5"};
  CoreOutcome n1;
  n1.node = "n1";
  n1.pid = 10;
  n1.rank = 0;
  n1.path = "/c/core.n1.rank0.10";
  n1.file_size = 100;
  n1.pause_us = 7;
  CoreOutcome gpu7;
  gpu7.node = "gpu7";
  gpu7.pid = 70;
  gpu7.error = "pid 70 is rank 9 now, not rank 7: not dumped (the pid was reused?)";
  AgentAnswers answers;
  answers.requested = hosts;
  answers.documents = {{"n1", "n1", write_core_outcomes_json("n1", {n1})},
                       {"10.0.0.7", "gpu7", write_core_outcomes_json("gpu7", {gpu7})},
                       {"n4", "n4", "{\"schema\":"},
                       {"n5", "n5", write_core_outcomes_json("n5", {})}};
  answers.unreachable = {{"n3", "no answer within 30 s"}};
  auto out = pair_core_outcomes(requests, hosts, answers);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_TRUE(out[0].written());
  EXPECT_EQ(out[0].path, "/c/core.n1.rank0.10");
  EXPECT_EQ(out[1].node, "10.0.0.7");  // reported under the report's name
  EXPECT_EQ(out[1].rank, 7);           // the agent did not say; the request did
  EXPECT_EQ(out[1].error, "pid 70 is rank 9 now, not rank 7: not dumped (the pid was reused?)");
  EXPECT_EQ(out[2].error, "node n3 did not answer: no answer within 30 s");
  EXPECT_EQ(out[2].rank, 3);
  EXPECT_EQ(out[3].error, "node n4 answered badly: core answer: not valid JSON");
  EXPECT_EQ(out[4].error, "the agent on n5 did not mention pid 50 of node n5");
}

TEST(CoreOutcomes, StreamKeyedAgentsKeepTheirOwnName) {
  FrameCollector c;
  std::string lines = frame_begin("gpu7") + frame_document("gpu7", write_agent_json(JobSnapshot{}));
  std::size_t pos = 0;
  while (pos < lines.size()) {
    std::size_t nl = lines.find('\n', pos);
    c.add_pdsh_line("10.0.0.7: " + lines.substr(pos, nl - pos));
    pos = nl + 1;
  }
  VerdictBook book({"10.0.0.7"});
  book.record(decode_outputs(c.outputs(), NodeKey::stream));
  FanoutResult r = read_job_answers(std::move(book).finish("no answer"));
  ASSERT_EQ(r.nodes.size(), 1u);
  EXPECT_EQ(r.nodes[0].first, "10.0.0.7");
  EXPECT_EQ(r.agent_nodes.at("10.0.0.7"), "gpu7");
}

// --- the agent's pid check -------------------------------------------------------------

DiscoveredProcess job_process(int pid, int rank) {
  DiscoveredProcess dp;
  dp.pid = pid;
  dp.role = "rank";
  dp.rank = rank;
  dp.environment = {fmt::format("SLURM_PROCID={}", rank), "SLURM_JOB_ID=7", "SLURMD_NODENAME=n2"};
  return dp;
}

class FakeProc {
 public:
  FakeProc()
      : dir_(std::filesystem::temp_directory_path() / fmt::format("hs-core-round-{}", ::getpid())) {
    std::filesystem::create_directories(dir_ / "500");
    std::filesystem::create_directories(dir_ / "510");
    std::filesystem::create_directories(dir_ / "400");
    write(dir_ / "400" / "stat",
          "400 (python3) S 1 400 400 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0\n");
    write(dir_ / "500" / "stat",
          "500 (python3) S 1 500 500 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0\n");
    write(dir_ / "510" / "stat",
          "510 (python3) Z 1 510 510 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0\n");
  }
  ~FakeProc() { std::filesystem::remove_all(dir_); }
  std::string root() const { return dir_.string(); }

 private:
  static void write(const std::filesystem::path& p, const std::string& text) {
    FILE* f = std::fopen(p.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  std::filesystem::path dir_;
};

TEST(CoreAgent, RefusesPidsThatAreGoneReusedOrOfAnotherRank) {
  FakeProc proc;  // pids 400 (started at tick 4242) and 500 run there, 510 is a zombie, 600 does
                  // not exist
  AgentOptions slurm;
  slurm.job_id = "7";
  slurm.node = "n2";
  std::vector<DiscoveredProcess> job{job_process(400, 3)};

  EXPECT_FALSE(refuse_core_request({"n2", 400, 3}, job, slurm, proc.root()).has_value());
  EXPECT_FALSE(refuse_core_request({"n2", 400, std::nullopt}, job, slurm, proc.root()).has_value());
  EXPECT_FALSE(refuse_core_request({"n2", 400, 3, 4242}, job, slurm, proc.root()).has_value());

  // Same pid, same job, same rank, but started at another time: a restarted worker.
  auto restarted = refuse_core_request({"n2", 400, 3, 99}, job, slurm, proc.root());
  ASSERT_TRUE(restarted.has_value());
  EXPECT_EQ(restarted->code, Errc::not_found);
  EXPECT_EQ(restarted->what(),
            "pid 400 is another process now (started at tick 4242, the captured one at tick 99): "
            "not dumped (the pid "
            "was reused)");
  EXPECT_EQ(restarted->hint, "run hangscan again for a fresh report");

  auto gone = refuse_core_request({"n2", 600, 3}, job, slurm, proc.root());
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->code, Errc::no_such_process);
  EXPECT_EQ(gone->what(), "pid 600 is gone: it exited after the capture");

  auto zombie = refuse_core_request({"n2", 510, 3}, job, slurm, proc.root());
  ASSERT_TRUE(zombie.has_value());
  EXPECT_EQ(zombie->what(), "pid 510 is a zombie: it exited after the capture");

  auto reused = refuse_core_request({"n2", 500, 3}, job, slurm, proc.root());
  ASSERT_TRUE(reused.has_value());
  EXPECT_EQ(
      reused->what(),
      "pid 500 is no longer a process of Slurm job 7 on node n2: not dumped (the pid was reused?)");
  EXPECT_EQ(reused->hint, "run hangscan again for a fresh report");

  auto other_rank = refuse_core_request({"n2", 400, 5}, job, slurm, proc.root());
  ASSERT_TRUE(other_rank.has_value());
  EXPECT_EQ(other_rank->what(),
            "pid 400 is rank 3 now, not rank 5: not dumped (the pid was reused?)");

  AgentOptions pdsh;
  pdsh.match = "train.py";
  pdsh.node = "gpu7";
  auto unmatched = refuse_core_request({"gpu7", 500, std::nullopt}, {}, pdsh, proc.root());
  ASSERT_TRUE(unmatched.has_value());
  EXPECT_EQ(unmatched->what(),
            "pid 500 is no longer a process matching --match 'train.py' on gpu7: not dumped (the "
            "pid was reused?)");
}

// A process to play a rank that --match finds. Discovery leaves out hangscan's own
// descendants, so it is started through a parent that exits at once (it is then nobody's
// child here); its pid comes back through a pipe and it is killed by that pid.
class Orphan {
 public:
  explicit Orphan(const std::string& marker) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_t mid = ::fork();
    if (mid == 0) {
      pid_t pid = ::fork();
      if (pid == 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        // A group of its own (the destructor kills the shell and its sleep together) and no
        // inherited stdout/stderr: a sleep left holding the test's output would keep ctest
        // waiting for its end.
        ::setpgid(0, 0);
        int null_fd = ::open("/dev/null", O_RDWR);
        if (null_fd >= 0) {
          ::dup2(null_fd, 0);
          ::dup2(null_fd, 1);
          ::dup2(null_fd, 2);
        }
        // Two commands, so that the shell stays (with the marker in its argv) and does not
        // exec sleep.
        ::execl("/bin/sh", "sh", "-c", "sleep 60; exit 0", marker.c_str(),
                static_cast<char*>(nullptr));
        std::_Exit(127);
      }
      int v = static_cast<int>(pid);
      (void)!::write(fds[1], &v, sizeof(v));
      std::_Exit(0);
    }
    ::close(fds[1]);
    int v = -1;
    if (::read(fds[0], &v, sizeof(v)) == sizeof(v)) pid_ = v;
    ::close(fds[0]);
    ::waitpid(mid, nullptr, 0);
  }
  ~Orphan() {
    if (pid_ > 0 && ::kill(-pid_, SIGKILL) != 0) ::kill(pid_, SIGKILL);
  }
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
};

TEST(CoreAgent, WritesOnlyItsOwnNodesCheckedPids) {
  const std::string marker = fmt::format("hs-core-agent-test-{}", ::getpid());
  Orphan child(marker);
  ASSERT_GT(child.pid(), 0);
  // Wait (bounded) until the child runs the shell with the marker in its command line.
  for (int i = 0; i < 200; ++i) {
    std::string cmd;
    if (FILE* f = std::fopen(fmt::format("/proc/{}/cmdline", child.pid()).c_str(), "r")) {
      char buf[512] = {};
      cmd.assign(buf, std::fread(buf, 1, sizeof(buf) - 1, f));
      std::fclose(f);
    }
    if (cmd.find(marker) != std::string::npos) break;
    ::usleep(10000);
  }
  AgentOptions o;
  o.match = marker;
  o.node = "n1";
  std::vector<CoreRequest> written;
  auto fake = [&](const CoreRequest& r, const Deadline&) {
    written.push_back(r);
    CoreOutcome c;
    c.node = r.node;
    c.pid = r.pid;
    c.path = fmt::format("/c/core.{}.{}", r.node, r.pid);
    return c;
  };
  const int gone_pid = 0x7ffffff0;
  auto out = run_core_agent(o,
                            {{"n1", child.pid(), std::nullopt},
                             {"n2", 77, 1},
                             {"n1", gone_pid, 4},
                             {"n1", static_cast<int>(::getpid()), std::nullopt}},
                            fake);
  ASSERT_TRUE(out.ok()) << out.error().what();
  ASSERT_EQ(out->size(), 3u);  // n2's request is for another agent
  EXPECT_EQ(written, (std::vector<CoreRequest>{{"n1", child.pid(), std::nullopt}}));
  EXPECT_TRUE((*out)[0].written()) << (*out)[0].error;
  EXPECT_EQ((*out)[0].path, fmt::format("/c/core.n1.{}", child.pid()));
  EXPECT_EQ((*out)[1].error, fmt::format("pid {} is gone: it exited after the capture", gone_pid));
  EXPECT_EQ((*out)[1].rank, 4);
  EXPECT_EQ((*out)[2].error,
            fmt::format("pid {} is no longer a process matching --match '{}' on n1: not dumped "
                        "(the pid was reused?)",
                        ::getpid(), marker));

  AgentOptions bad = o;
  bad.node = "n1;x";
  EXPECT_EQ(run_core_agent(bad, {}, fake).error().code, Errc::usage);
}

}  // namespace
}  // namespace hangscan
