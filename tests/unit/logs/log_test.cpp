// `hangscan logs`: line prefixes, the pattern table, the reader (files, gzip, binary, long
// lines, tracebacks, torchrun's summary) and the verdict.
//
// Lines marked FIXTURE cannot be produced on this machine (NCCL needs GPUs; Debian's torch 1.13
// predates the NCCL watchdog's current text); they are built from the producers' own format
// strings at the cited versions. The gloo and Python lines are also read from real jobs in
// tests/integration/test_logs.py.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <tuple>

#include "logs/log_patterns.h"
#include "logs/log_reader.h"
#include "logs/log_verdict.h"
#include "logs/log_writers.h"
#include "temp_dir.h"

namespace hangscan {
namespace {

TEST(LogPrefix, LauncherLabelsDatesAndPyTorchRanks) {
  LinePrefix p = parse_line_prefix(
      "[rank3]:[E703 15:37:17.178116623 ProcessGroupNCCL.cpp:1922] "
      "[PG ID 2 PG GUID 3 Rank 3] Exception");
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.pg, 2);
  EXPECT_EQ(p.time, std::nullopt);  // glog's prefix carries no year
  p = parse_line_prefix("[default1]:2026-11-27 12:03:04,250 INFO hello");
  EXPECT_EQ(p.rank, 1);
  ASSERT_TRUE(p.time);
  EXPECT_DOUBLE_EQ(*p.time, 1795780984.25);  // date -u -d '2026-11-27 12:03:04' +%s
  p = parse_line_prefix("12: srun labelled line");
  EXPECT_EQ(p.rank, 12);
  EXPECT_EQ(p.rest, "srun labelled line");
  p = parse_line_prefix("[Rank 5] Watchdog caught collective operation timeout");
  EXPECT_EQ(p.rank, 5);
  EXPECT_EQ(p.pg, std::nullopt);
  EXPECT_EQ(parse_line_prefix("plain text: no rank").rank, std::nullopt);
  EXPECT_EQ(parse_log_time("2026-11-27_12:03:04"), 1795780984.0);
  EXPECT_EQ(parse_log_time("2026-13-27 12:03:04"), std::nullopt);
}

TEST(LogPatterns, EachProducersLineBecomesItsEvent) {
  // FIXTURE: torch 2.1 ProcessGroupNCCL.cpp, WorkNCCL::checkTimeout.
  auto e = classify_log_line(
      "[Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1042, "
      "OpType=ALLREDUCE, NumelIn=524288, NumelOut=524288, Timeout(ms)=600000) ran for 600183 "
      "milliseconds before timing out.");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, LogKind::collective_timeout);
  EXPECT_EQ(e->seq, 1042);
  EXPECT_EQ(e->op, "ALLREDUCE");
  EXPECT_EQ(e->rank, 5);
  // FIXTURE: torch 2.4 ProcessGroupNCCL.cpp, the watchdog's exception.
  e = classify_log_line(
      "[rank3]:[E227 16:30:43.526290891 ProcessGroupNCCL.cpp:1785] [PG ID 2 "
      "PG GUID 3 Rank 3] Exception (either an error or timeout) detected by "
      "watchdog at work: 32, last enqueued NCCL work: 32, last completed NCCL "
      "work: 31.");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, LogKind::seq_status);
  EXPECT_EQ(e->seq, 32);
  EXPECT_EQ(e->last_enqueued, 32);
  EXPECT_EQ(e->last_completed, 31);
  EXPECT_EQ(e->pg, 2);
  EXPECT_EQ(e->rank, 3);
  // Real (Debian torch 1.13 on this machine): gloo's unbound buffer.
  e = classify_log_line(
      "RuntimeError: [./gloo/transport/tcp/unbound_buffer.cc:81] Timed out "
      "waiting 4000ms for recv operation to complete");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, LogKind::gloo_timeout);
  EXPECT_EQ(e->op, "recv");
  // FIXTURE: slurm 22.05 slurmstepd and srun.
  e = classify_log_line(
      "slurmstepd: error: *** JOB 42 ON n1 CANCELLED AT 2026-11-27T12:03:04 "
      "DUE TO TIME LIMIT ***");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, LogKind::slurm_cancelled);
  EXPECT_EQ(e->op, "TIME LIMIT");
  EXPECT_EQ(e->host, "n1");
  e = classify_log_line("srun: error: n2: task 3: Out Of Memory");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, LogKind::srun_task);
  EXPECT_EQ(e->op, "Out Of Memory");
  e = classify_log_line(
      "[ 1234.5] Memory cgroup out of memory: Killed process 4725 (python3) "
      "total-vm:231540kB");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, LogKind::kernel_oom);
  EXPECT_EQ(e->pid, 4725);
  // FIXTURE: NCCL 2.18 debug.cc.
  e = classify_log_line("node7:4711:4790 [3] NCCL WARN NET/IB : Got completion with error 12");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, LogKind::nccl_warn);
  EXPECT_EQ(e->pid, 4711);
  EXPECT_EQ(classify_log_line("an ordinary line about a Timeout in a config"), std::nullopt);
}

// Real: Debian's torchrun (torch 1.13) ending its workers after one was OOM-killed
// (tests/integration/test_logs_torchrun.py): a pid, not a rank, and no failure of its own.
TEST(LogPatterns, TorchrunEndingItsWorkersNamesTheirPids) {
  auto stop = classify_log_line(
      "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 28965 closing "
      "signal SIGTERM");
  ASSERT_TRUE(stop && stop->pid);
  EXPECT_EQ(std::tuple(stop->kind, *stop->pid, stop->op, stop->rank, is_failure(stop->kind)),
            std::tuple(LogKind::torchrun_stop, 28965, std::string("SIGTERM"), std::optional<int>(),
                       false));
}

TEST(LogFileNames, RanksFromSlurmTorchrunAndRankNames) {
  EXPECT_EQ(rank_from_file_name("/logs/train-42-3.out"), 3);
  EXPECT_EQ(rank_from_file_name("/logs/train_42_17.err.gz"), 17);
  EXPECT_EQ(rank_from_file_name("run/rank_5.log"), 5);
  EXPECT_EQ(rank_from_file_name("/l/abc/attempt_0/2/stderr.log"), 2);
  EXPECT_EQ(rank_from_file_name("/logs/train.out"), std::nullopt);
  EXPECT_EQ(rank_from_file_name("/logs/job-3.out"), std::nullopt);  // one number: the job id
}

TEST(LogReader, TracebacksGzipBinaryLongLinesAndFifos) {
  TempDir dir;
  dir.file("job-7-0.out",
           "hello\nTraceback (most recent call last):\n  File \"/x/train.py\", line 11, in "
           "<module>\n    step()\n  File \"/x/train.py\", line 5, in step\n    1/0\n"
           "ZeroDivisionError: division by zero\n");
  std::string gz = dir.path() + "/job-7-1.out.gz";
  gzFile g = gzopen(gz.c_str(), "wb");
  std::string text = "srun: error: n2: tasks 1-2: Killed\n";
  gzwrite(g, text.data(), static_cast<unsigned>(text.size()));
  gzclose(g);
  dir.file("job-7-2.out", std::string("\x7f"
                                      "ELF\0\0\0",
                                      7));
  dir.file("job-7-3.out", std::string(200000, 'x') + "\n[Rank 3] done\n");
  ::mkfifo((dir.path() + "/job-7-4.out").c_str(), 0600);
  LogSet logs = read_logs({dir.path()});
  ASSERT_EQ(logs.files.size(), 4u);  // a directory's FIFO is not a log: never opened
  EXPECT_EQ(logs.files[0].error, "");
  EXPECT_TRUE(logs.files[1].compressed);
  EXPECT_EQ(logs.files[2].error, "binary data (NUL bytes), not read as a log");
  EXPECT_EQ(logs.files[3].cut_lines, 1u);
  EXPECT_EQ(logs.files[3].lines, 2u);
  EXPECT_EQ(read_logs({dir.path() + "/job-7-4.out"}).files[0].error, "not a regular file");
  ASSERT_EQ(logs.events.size(), 3u);
  EXPECT_EQ(logs.events[0].kind, LogKind::exception);
  EXPECT_EQ(logs.events[0].what, "ZeroDivisionError: division by zero");
  EXPECT_EQ(logs.events[0].where, "train.py:5 in step");
  EXPECT_EQ(logs.events[0].line, 7u);
  EXPECT_EQ(logs.events[1].rank, 1);  // one event per srun task
  EXPECT_EQ(logs.events[2].rank, 2);
}

TEST(LogReader, TorchrunsSummaryNamesTheRootCause) {
  TempDir dir;
  std::string p = dir.file("torchrun.err",
                           "============================================================\n"
                           "train.py FAILED\n"
                           "------------------------------------------------------------\n"
                           "Failures:\n  <NO_OTHER_FAILURES>\n"
                           "------------------------------------------------------------\n"
                           "Root Cause (first observed failure):\n[0]:\n"
                           "  time      : 2026-11-27_12:03:04\n  host      : vm\n"
                           "  rank      : 1 (local_rank: 1)\n  exitcode  : 1 (pid: 4242)\n"
                           "  error_file: <N/A>\n"
                           "  traceback : To enable traceback see: https://example.invalid\n"
                           "============================================================\n");
  LogSet logs = read_logs({p});
  ASSERT_EQ(logs.events.size(), 1u);
  const LogEvent& e = logs.events[0];
  EXPECT_EQ(e.kind, LogKind::torchrun_failure);
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.pid, 4242);
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_EQ(e.host, "vm");
  EXPECT_EQ(e.what, "root cause");
  EXPECT_EQ(e.time, 1795780984.0);
}

// FIXTURE: 8 ranks of torch 2.4 whose rank 5 never enqueued collective 1042.
TEST(LogVerdict, TheRankThatEnqueuedLeastIsNamed) {
  TempDir dir;
  for (int r = 0; r < 8; ++r) {
    std::string text;
    long long enq = r == 5 ? 1041 : 1042;
    if (r != 5)
      text += "[rank" + std::to_string(r) + "]:[E703 15:37:17.1 ProcessGroupNCCL.cpp:1] [PG ID 0 " +
              "PG GUID 0(default_pg) Rank " + std::to_string(r) +
              "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1042, "
              "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 "
              "milliseconds before timing out.\n";
    text += "[rank" + std::to_string(r) + "]:[E703 15:37:17.2 ProcessGroupNCCL.cpp:2] [PG ID 0 " +
            "PG GUID 0(default_pg) Rank " + std::to_string(r) + "] Exception (either an error or " +
            "timeout) detected by watchdog at work: 1042, last enqueued NCCL work: " +
            std::to_string(enq) + ", last completed NCCL work: 1041.\n";
    dir.file("train-9-" + std::to_string(r) + ".out", text);
  }
  LogSet logs = read_logs({dir.path()});
  LogFindings f = analyze_logs(logs);
  EXPECT_EQ(f.suspects, (std::vector<int>{5}));
  EXPECT_EQ(f.world, 8);
  EXPECT_EQ(
      log_suspect_reasons(logs, f),
      (std::vector<std::string>{"rank 5 never enqueued collective 1042 of PG 0 (last "
                                "enqueued 1041; ranks 0-4,6-7 timed out in ALLREDUCE 1042)"}));
  std::string text = render_logs_text(logs, f);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "hangscan logs: 8 files, 15 events, ranks 0-4,6-7 reported failures, world size 8");
}

TEST(LogWriters, ControlBytesInLinesAreShownNotSent) {
  TempDir dir;
  dir.file("job-1-0.out",
           "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n"
           "ValueError: \x1b]0;TITLE\x07\x1b[2J\n");
  LogSet logs = read_logs({dir.path()});
  std::string text = render_logs_text(logs, analyze_logs(logs));
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(text.find("ValueError: \\x1b]0;TITLE\\x07\\x1b[2J"), std::string::npos);
}

}  // namespace
}  // namespace hangscan

namespace hangscan {
namespace {

// Not fixtures built from format strings: the batch outputs of two real jobs on the 3-node test
// cluster (Slurm 22.05, task/cgroup; tests/fanout/cluster.sh with HS_SLURM_CGROUP=1), copied
// as Slurm wrote them. Job 26601: one step with --mem=100M that outgrew it (sacct: step
// OUT_OF_MEMORY 0:125). Job 26602: two tasks past --time=1 (sacct: TIMEOUT).
std::string real_log(const char* name) { return std::string(HS_FIXTURES) + "/logs/" + name; }

TEST(LogRealSlurm, OomKilledStepIsNamedFromSlurmstepdAndSrun) {
  LogSet logs = read_logs({real_log("slurm-26601.out")});
  ASSERT_EQ(logs.events.size(), 2u);
  const LogEvent& oom = logs.events[0];
  EXPECT_EQ(oom.kind, LogKind::slurm_oom);
  EXPECT_EQ(oom.line, 2u);
  EXPECT_EQ(oom.what, "StepId=26601.0");
  EXPECT_EQ(oom.op, "Out Of Memory");
  const LogEvent& task = logs.events[1];
  EXPECT_EQ(task.kind, LogKind::srun_task);
  EXPECT_EQ(task.line, 3u);
  EXPECT_EQ(task.host, "n1");
  EXPECT_EQ(task.rank, 0);
  EXPECT_EQ(task.op, "Out Of Memory");
  LogFindings f = analyze_logs(logs);
  EXPECT_EQ(f.deaths, (std::vector<std::size_t>{0, 1}));
  std::string text = render_logs_text(logs, f);
  EXPECT_NE(
      text.find("died: no rank: slurm: oom-kill in StepId=26601.0 (its memory cgroup's limit) "
                "(slurm-26601.out:2)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("died: rank 0: srun: Out Of Memory (slurm-26601.out:3)"), std::string::npos)
      << text;
}

TEST(LogRealSlurm, TimeLimitIsNamedFromSlurmstepdWithItsTime) {
  LogSet logs = read_logs({real_log("slurm-26602.out")});
  ASSERT_EQ(logs.events.size(), 4u);
  const LogEvent& job = logs.events[0];
  EXPECT_EQ(job.kind, LogKind::slurm_cancelled);
  EXPECT_EQ(job.what, "job 26602");
  EXPECT_EQ(job.host, "n2");
  EXPECT_EQ(job.op, "TIME LIMIT");
  EXPECT_EQ(job.time, 1795792860.0);  // 2026-11-27T15:21:00, read as UTC
  EXPECT_EQ(logs.events[1].what, "step 26602.0");
  EXPECT_EQ(logs.events[2].rank, 1);
  EXPECT_EQ(logs.events[2].op, "Terminated");
  EXPECT_EQ(logs.events[3].rank, 0);
  LogFindings f = analyze_logs(logs);
  ASSERT_TRUE(f.first_failure);
  EXPECT_EQ(*f.first_failure, 0u);
  std::string text = render_logs_text(logs, f);
  EXPECT_NE(text.find("first failure: no rank at slurm-26602.out:3: slurm: job 26602 "
                      "cancelled (TIME LIMIT)"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace hangscan

namespace hangscan {
namespace {

TEST(LogReader, LabelledLastLinesAreKeptPerRankAndBounded) {
  TempDir dir;
  std::string text;
  for (int r = 0; r < 10; ++r) text += "[rank" + std::to_string(r) + "]: step " + "\n";
  text += "[rank1]: loading batch 17\n[rank1]:   \n";
  LogReadOptions o;
  o.max_labels = 4;  // a hostile file's million labels cost no more than this many
  LogSet logs = read_logs({dir.file("all.log", text)}, o);
  const auto& last = logs.files[0].label_last_lines;
  ASSERT_EQ(last.size(), 4u);
  EXPECT_EQ(last.at(1), (std::pair<std::uint64_t, std::string>{11, "[rank1]: loading batch 17"}));
  EXPECT_EQ(last.count(4), 0u);
}

}  // namespace
}  // namespace hangscan
