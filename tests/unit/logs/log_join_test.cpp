// The logs beside a capture (`--logs`, logs/log_join.h and add_log_sentences): which line is a
// rank's, how long before the capture it was written, and the sentences the verdict gets.
#include <gtest/gtest.h>
#include <string>

#include "logs/log_join.h"
#include "logs/log_reader.h"
#include "logs/log_verdict.h"
#include "logs/log_writers.h"
#include "temp_dir.h"

namespace hangscan {
namespace {

Frame python_frame(const char* function, const char* file, int line) {
  return Frame{.kind = FrameKind::python, .function = function, .file = file, .line = line};
}

ProcessSnapshot rank_process(int rank, Frame innermost) {
  ProcessSnapshot p;
  p.pid = 100 + rank;
  p.rank = rank;
  p.role = "rank";
  p.captured_at = 1795792900.0;  // 2026-11-27T15:21:40 UTC
  ThreadSnapshot t;
  t.tid = p.pid;
  t.frames = FrameStack({std::move(innermost), python_frame("<module>", "/job/train.py", 90)});
  p.threads.push_back(std::move(t));
  return p;
}

const char* kTimeout =
    "2026-11-27 15:21:10,000 Traceback (most recent call last):\n"
    "  File \"/job/train.py\", line 51, in <module>\n"
    "RuntimeError: [./gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 3000ms for "
    "recv operation to complete\n";

// Ranks 0, 1 and 3 time out in gloo; rank 2 printed no failure, only its last ordinary line;
// rank 3 has no process in the capture (a missing rank) and a file of its own.
struct Job {
  TempDir dir;
  LogSet logs;
  JobSnapshot job;
  Analysis analysis;
  Job() {
    dir.file("train-5-0.out", kTimeout);
    dir.file("train-5-1.out", kTimeout);
    dir.file("train-5-2.out", "2026-11-27 15:21:00,500 INFO loading batch 17\n\n");
    dir.file("train-5-3.out",
             "2026-11-27 15:20:40,000 RuntimeError: [./gloo/transport/tcp/unbound_buffer.cc:81] "
             "Timed out waiting 3000ms for recv operation to complete\n");
    logs = read_logs({dir.path()});
    for (int r = 0; r < 2; ++r)
      job.processes.push_back(rank_process(r, python_frame("all_reduce", "/d/c10d.py", 7)));
    job.processes.push_back(rank_process(2, python_frame("load_batch", "/job/data.py", 88)));
    analysis.suspects = {2, 3};
    analysis.last_logs = join_logs(logs, job);
  }
};

TEST(LogJoin, EachRanksLastLineItsAgeAndItsFrame) {
  Job j;
  ASSERT_EQ(j.analysis.last_logs.size(), 4u);
  const RankLastLog& r0 = j.analysis.last_logs[0];
  EXPECT_EQ(r0.kind, "gloo_timeout");
  EXPECT_EQ(r0.line, 3u);
  EXPECT_EQ(r0.where, "all_reduce (c10d.py:7)");
  const RankLastLog& r2 = j.analysis.last_logs[2];
  EXPECT_EQ(r2.kind, "last_line");  // no event: its file's last line that is not blank
  EXPECT_EQ(r2.line, 1u);
  EXPECT_EQ(r2.text, "2026-11-27 15:21:00,500 INFO loading batch 17");
  ASSERT_TRUE(r2.before_capture_s);
  EXPECT_DOUBLE_EQ(*r2.before_capture_s, 39.5);
  EXPECT_EQ(r2.where, "load_batch (data.py:88)");
  const RankLastLog& r3 = j.analysis.last_logs[3];
  EXPECT_EQ(r3.where, "");  // not captured; its age counts from the latest capture
  EXPECT_DOUBLE_EQ(*r3.before_capture_s, 60.0);
}

TEST(LogJoin, TheLogsFindingsSayWhereTheRankIs) {
  Job j;
  LogFindings f = analyze_logs(j.logs, 4);
  add_log_sentences(j.logs, f, j.analysis);
  // The logs' own finding about one rank says where its stack stands (issue 35's sentence);
  // the writers add "logs: " and the last lines (report/finding_words.h).
  EXPECT_EQ(j.analysis.log_verdict,
            std::vector<std::string>{"rank 2 reported no failure while ranks 0-1,3 did (timed out "
                                     "after 3000 ms waiting to recv); it is in load_batch "
                                     "(data.py:88)"});
}

}  // namespace
// torchrun's and the kernel's lines name pids: the capture's pid -> rank map gives their ranks,
// only where one captured rank holds the pid (on the line's host when it names one).
TEST(LogJoin, PidsOfTheCaptureGiveLinesTheirRanks) {
  TempDir dir;
  dir.file("torchrun.err",
           "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 100 closing "
           "signal SIGTERM\n"
           "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 101 closing "
           "signal SIGTERM\n"
           "Memory cgroup out of memory: Killed process 777 (python3) total-vm:1kB\n"
           "node7:101:4790 [3] NCCL WARN NET/IB : Got completion with error 12\n");
  LogSet logs = read_logs({dir.path()});
  JobSnapshot job;
  job.processes.push_back(rank_process(0, python_frame("save", "/job/train.py", 3)));
  job.processes.push_back(rank_process(1, python_frame("save", "/job/train.py", 3)));
  job.processes.back().host = "node8";
  ProcessSnapshot other = rank_process(5, python_frame("save", "/job/train.py", 3));
  other.pid = 100;
  other.host = "node9";
  job.processes.push_back(other);  // pid 100 on two hosts: which one is not known
  ranks_from_capture(logs, job);
  ASSERT_EQ(logs.events.size(), 4u);
  EXPECT_EQ(logs.events[0].rank, std::nullopt);
  EXPECT_EQ(logs.events[1].rank, 1);
  EXPECT_EQ(logs.events[2].rank, std::nullopt);  // no captured process 777
  EXPECT_EQ(logs.events[3].rank, std::nullopt);  // pid 101 is on node8, the line on node7
}

}  // namespace hangscan

namespace hangscan {
namespace {

// FIXTURE: torchrun's summary in its 1.13 format (errors/__init__.py, ChildFailedError), whose
// real lines test_logs_torchrun.py reads; here a node's two kernel deaths while two ranks are
// missing, so the analysis could tie neither to a rank. The summary names pid 501's rank (on
// host n1, as "n1.example"); pid 500 is named by no line with a rank; pid 501 on n2 is another
// process.
TEST(LogJoin, ADeathTakesTheRankTheLogsNameForItsPid) {
  TempDir dir;
  dir.file("torchrun.err",
           "Memory cgroup out of memory: Killed process 501 (python3) total-vm:1kB\n"
           "Root Cause (first observed failure):\n[0]:\n"
           "  time      : 2026-11-27_12:03:04\n  host      : n1.example\n"
           "  rank      : 3 (local_rank: 1)\n  exitcode  : -9 (pid: 501)\n"
           "============================================================\n");
  LogSet logs = read_logs({dir.path()});
  ASSERT_EQ(logs.events.size(), 2u);
  EXPECT_EQ(logs.events[0].rank, 3);  // the kernel's line: its pid's rank, from the summary
  Analysis a;
  for (auto [pid, host] : {std::pair{500, "n1"}, std::pair{501, "n1"}, std::pair{501, "n2"}}) {
    Finding f{.kind = FindingKind::death, .ranks = {2, 3}};
    f.death = Death{.how = "oom-kill", .pid = pid, .host = host};
    a.findings.push_back(f);
  }
  ranks_of_deaths(logs, a);
  EXPECT_EQ(a.findings[0].rank, std::nullopt);
  EXPECT_EQ(a.findings[0].ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(a.findings[1].rank, 3);
  EXPECT_TRUE(a.findings[1].flag);
  EXPECT_EQ(a.findings[1].rank_from, Finding::RankFrom::log);
  EXPECT_TRUE(a.findings[1].ranks.empty());
  EXPECT_EQ(a.findings[2].rank, std::nullopt);
}

}  // namespace
}  // namespace hangscan
