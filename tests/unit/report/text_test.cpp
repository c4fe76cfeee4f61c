#include <gtest/gtest.h>

#include "../group/job_builder.h"
#include "report/finding_words.h"
#include "report/graph_writers.h"
#include "report/text_writer.h"

namespace hangscan {
namespace {

using namespace hangscan::testing;

JobSnapshot gloo_job() {
  JobSnapshot job;
  for (int r = 0; r < 4; ++r) {
    ProcessSnapshot p =
        rank_process(r, 100 + r, r == 2 ? in_sleep() : in_all_reduce(), 'S', "n1", 4);
    p.python = PythonInfo{"3.11.2", false, ""};
    p.cmdline = {"python3", "hang_gloo.py"};
    p.threads[0].syscall = r == 2 ? "clock_nanosleep" : "futex";
    job.processes.push_back(std::move(p));
  }
  ProcessSnapshot launcher;
  launcher.pid = 99;
  launcher.host = "n1";
  launcher.role = "launcher";
  launcher.cmdline = {"torchrun", "--nproc-per-node=4", "hang_gloo.py"};
  job.processes.push_back(launcher);
  return job;
}

TEST(TextWriter, JobReportPutsSuspectsFirst) {
  JobSnapshot job = gloo_job();
  job.unreachable.push_back({"n3", "no answer within 30 s"});
  job.processes[1].progress = "stuck";
  job.processes[1].cpu_percent = 0.4;
  Analysis a = analyze(job, GroupOptions{});
  TextOptions o;
  o.detail_limit = 3;  // 5 processes: details for the suspect and one member per group
  EXPECT_EQ(write_text(job, &a, o),
            R"(hangscan: 5 processes, 4 ranks, 2 groups, world size 4, 1 unreachable node
SUSPECT rank 2 is not in all_reduce with ranks 0-1,3: it is in worker (hang_gloo.py:19) -> time.sleep

Stack tree (main thread, outermost first):
[0-3] <module> (hang_gloo.py:30)
      worker
├─[0-1,3] all_reduce (distributed_c10d.py:1541)
└─[2] time.sleep  <- suspect

Processes:

rank 2  pid 102  host n1  state S  python 3.11.2  SUSPECT
  cmd: python3 hang_gloo.py
  Thread 102 "python3" (main, state S, clock_nanosleep)
      time.sleep
      worker (/tmp/hang_gloo.py:19)
      <module> (/tmp/hang_gloo.py:30)

rank 0  pid 100  host n1  state S  python 3.11.2
  cmd: python3 hang_gloo.py
  Thread 100 "python3" (main, state S, futex)
      all_reduce (/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py:1541)
      worker (/tmp/hang_gloo.py:20)
      <module> (/tmp/hang_gloo.py:30)
(3 more processes like the ones above not shown)

Unreachable nodes:
  n3: no answer within 30 s
)");
  o.detail_limit = 16;
  std::string all = write_text(job, &a, o);
  EXPECT_NE(all.find("rank 1  pid 101  host n1  state S  blocked (0% CPU)  python 3.11.2\n"),
            std::string::npos);
  EXPECT_NE(all.find("pid 99  host n1  launcher\n  cmd: torchrun --nproc-per-node=4 hang_gloo.py\n "
                     " (no threads captured)\n"),
            std::string::npos);
  EXPECT_EQ(all.find('\033'), std::string::npos);
  o.color = true;
  std::string colored = write_text(job, &a, o);
  EXPECT_NE(colored.find("\033[1;31mSUSPECT\033[0m rank 2 is not in all_reduce"),
            std::string::npos);
  EXPECT_NE(colored.find("\033[1;31m  <- suspect\033[0m"), std::string::npos);
}

TEST(TextWriter, TreeMarksSmallestBranchesAndElidesLongRuns) {
  JobSnapshot job;
  std::vector<Frame> common;
  for (int i = 9; i >= 0; --i)
    common.push_back(native("f" + std::to_string(i), "/bin/app", 0x10u * static_cast<unsigned>(i)));
  auto with = [&](const char* leaf) {
    std::vector<Frame> s = {native(leaf, "/lib/libc.so.6", 0x99)};
    s.insert(s.end(), common.begin(), common.end());
    return s;
  };
  for (int r = 0; r < 4; ++r)
    job.processes.push_back(rank_process(r, 10 + r, with(r < 2 ? "poll" : "read")));
  job.processes.push_back(rank_process(4, 14, with("nanosleep")));
  job.processes.push_back(rank_process(5, 15, common));  // stack ends in f9
  Analysis a = analyze(job, GroupOptions{});
  TextOptions o;
  o.detail_limit = 0;
  std::string text = write_text(job, &a, o);
  std::string tree =
      text.substr(text.find("Stack tree"), text.find("\nProcesses:") - text.find("Stack tree"));
  EXPECT_EQ(tree, R"(Stack tree (main thread, outermost first):
[0-5] f0
      f1
      ... 5 frames ...
      f7
      f8
      f9
├─[0-1] poll
├─[2-3] read
├─[4] nanosleep  <- smallest
└─[5] (stack ends here)  <- smallest
)");
  EXPECT_EQ(
      verdict_words(job, a).notes,
      (std::vector<std::string>{
          "no clear majority: below f9, ranks 0-1 are in poll, ranks 2-3 are in "
          "read, rank 4 is in nanosleep and rank 5 is in f9 (stack ends); no suspect named"}));
  EXPECT_NE(text.find("note: no clear majority"), std::string::npos);
  // A process without any stack shows at the root.
  JobSnapshot with_empty = job;
  with_empty.processes.push_back(rank_process(6, 16, {}));
  Analysis e = analyze(with_empty, GroupOptions{});
  std::string t2 = write_text(with_empty, &e, o);
  EXPECT_NE(t2.find("\n├─[0-5] f0\n│       f1\n"), std::string::npos) << t2;
  EXPECT_NE(t2.find("\n└─[6] (no stack)  <- suspect\n"), std::string::npos) << t2;
  o.width = 20;
  std::string narrow = write_text(job, &a, o);
  EXPECT_EQ(narrow.substr(0, narrow.find('\n') + 1), "hangscan: 6 proce...\n");
}

TEST(TextWriter, SingleProcessLooksLikeAPlainDump) {
  JobSnapshot job;
  ProcessSnapshot p;
  p.pid = 4321;
  p.state = 'S';
  p.cmdline = {"python3", "/tmp/hang.py"};
  p.python = PythonInfo{"3.11.2", false, ""};
  p.pause_us = 812;
  ThreadSnapshot main;
  main.tid = 4321;
  main.name = "python3";
  main.state = 'S';
  main.is_main = true;
  main.syscall = "futex";
  main.wchan = "futex_wait_queue";
  main.gil = false;
  main.frames = {py_builtin("time.sleep"), py("worker", "/tmp/hang.py", 19)};
  main.frames[1].locals = {{"i", "41"}};
  Frame k;
  k.kind = FrameKind::kernel;
  k.function = "futex_wait_queue";
  main.kernel_frames = {k};
  ThreadSnapshot worker;
  worker.tid = 4322;
  worker.name = "worker";
  worker.state = 'R';
  worker.gil = true;
  Frame inl = native("inner", "/usr/lib/libfoo.so.1", 0x1a2b);
  inl.kind = FrameKind::inline_frame;
  inl.file = "foo.c";
  inl.line = 12;
  worker.frames = {inl, native("compute", "/usr/lib/libfoo.so.1", 0x1a2b)};
  worker.notes = {"unwind stopped: no CFI for 0x0"};
  p.threads = {main, worker};
  p.diagnostics.push_back({Diagnostic::Severity::warning, "no debuginfo for libfoo.so.1",
                           "install libfoo1-dbgsym", "", 4321, std::nullopt});
  job.processes.push_back(p);
  Analysis a = analyze(job, GroupOptions{});
  EXPECT_EQ(write_text(job, &a, TextOptions{}), R"(Process 4321: python3 /tmp/hang.py
state S, Python 3.11.2, paused 812 us

Thread 4321 "python3" (main, state S, futex, wchan futex_wait_queue)
    time.sleep
    worker (/tmp/hang.py:19)
        i = 41
  kernel:
    futex_wait_queue

Thread 4322 "worker" (state R, holds GIL)
    inner (foo.c:12) [inline]
    compute [libfoo.so.1+0x1a2b]
  note: unwind stopped: no CFI for 0x0
warning: no debuginfo for libfoo.so.1
  hint: install libfoo1-dbgsym
)");
}

TEST(TextWriter, AsyncioTasksSayWhoWaitsOnWhom) {
  JobSnapshot job;
  ProcessSnapshot p;
  p.pid = 4321;
  p.state = 'S';
  p.python = PythonInfo{"3.12.1", false, ""};
  ThreadSnapshot main;
  main.tid = 4321;
  main.is_main = true;
  main.frames = {py("run_forever", "/usr/lib/python3.12/asyncio/base_events.py", 641)};
  p.threads = {main};
  AsyncioTask consumer{
      "consumer", 0x10, {py("consumer", "/srv/app.py", 32)}, "producer", "_asyncio.Task"};
  AsyncioTask producer{"producer",
                       0x20,
                       {py("Event.wait", "/usr/lib/python3.12/asyncio/locks.py", 212),
                        py("producer", "/srv/app.py", 27)},
                       std::nullopt,
                       "_asyncio.Future"};
  AsyncioTask fresh{"Task-9", 0x30, {}, std::nullopt, ""};
  p.asyncio_tasks = {consumer, producer, fresh};
  job.processes.push_back(p);
  EXPECT_EQ(write_text(job, nullptr, TextOptions{}), R"(Process 4321
state S, Python 3.12.1

Thread 4321 (main)
    run_forever (/usr/lib/python3.12/asyncio/base_events.py:641)

asyncio tasks (3):
  Task "consumer" awaits task "producer"
      consumer (/srv/app.py:32)
  Task "producer" awaits a _asyncio.Future
      Event.wait (/usr/lib/python3.12/asyncio/locks.py:212)
      producer (/srv/app.py:27)
  Task "Task-9"
      (not started)
)");
}

TEST(GraphWriters, DotHasRankSetsOnEdgesAndRedSuspects) {
  JobSnapshot job = gloo_job();
  job.job_id = "7";
  Analysis a = analyze(job, GroupOptions{});
  EXPECT_EQ(write_dot(job, a), R"DOT(digraph hangscan {
  node [shape=box, fontname="monospace"];
  n0 [label="job 7 (0-3)", shape=ellipse];
  n1 [label="<module>\nhang_gloo.py:30"];
  n0 -> n1 [label="0-3"];
  n2 [label="worker\nhang_gloo.py"];
  n1 -> n2 [label="0-3"];
  n3 [label="all_reduce\ndistributed_c10d.py:1541"];
  n2 -> n3 [label="0-1,3"];
  n4 [label="time.sleep", style=filled, fillcolor="#ffcccc", color=red];
  n2 -> n4 [label="2", color=red, fontcolor=red, penwidth=2];
}
)DOT");
}

TEST(GraphWriters, FoldedStacksOutermostFirst) {
  JobSnapshot job = gloo_job();
  job.processes[0].threads[0].frames[0].function = "all;reduce";  // ';' would split a frame
  GroupOptions o;
  EXPECT_EQ(
      write_folded(job, o),
      "<module>;worker;all:reduce 1\n<module>;worker;all_reduce 2\n<module>;worker;time.sleep 1\n");
  o.granularity = GroupOptions::Granularity::function_line;
  o.top_n = 2;
  EXPECT_EQ(write_folded(job, o),
            "worker (hang_gloo.py:19);time.sleep 1\n"
            "worker (hang_gloo.py:20);all:reduce (distributed_c10d.py:1541) 1\n"
            "worker (hang_gloo.py:20);all_reduce (distributed_c10d.py:1541) 2\n");
}

}  // namespace
}  // namespace hangscan

namespace hangscan {
namespace {

// Lines are cut only when a width is given (a terminal's), and never inside "(file:line)".
TEST(TextWriter, WidthCutsOnlyWhenGivenAndKeepsLocationsWhole) {
  JobSnapshot job;
  ProcessSnapshot p;
  p.pid = 77;
  p.state = 'S';
  ThreadSnapshot t;
  t.tid = 77;
  t.name = "python3";
  t.state = 'S';
  t.is_main = true;
  const std::string file =
      "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py";
  t.frames = {py("all_reduce", file, 2050)};
  p.threads = {t};
  job.processes.push_back(p);
  const std::string full = "    all_reduce (" + file + ":2050)";
  TextOptions o;
  EXPECT_NE(write_text(job, nullptr, o).find("\n" + full + "\n"),
            std::string::npos);  // width 0: never cut
  o.width = 60;
  std::string cut = write_text(job, nullptr, o);
  EXPECT_NE(cut.find("\n    all_reduce...\n"), std::string::npos) << cut;
  EXPECT_EQ(cut.find("(/opt"), std::string::npos) << cut;
  o.width = static_cast<int>(full.size());
  EXPECT_NE(write_text(job, nullptr, o).find("\n" + full + "\n"), std::string::npos);
}

}  // namespace
}  // namespace hangscan

namespace hangscan {
namespace {

// A name from the target with ESC and a newline cannot drive a terminal or forge a verdict line
// (util/escape.h): the text shows it visibly, the DOT label and the folded line keep theirs.
JobSnapshot job_with_hostile_name() {
  JobSnapshot job = gloo_job();
  Frame& f = job.processes[2].threads[0].frames.edit()[0];
  f.function = "time.sleep\nSUSPECT rank 0\x1b[2J;x";
  f.locals = {{"s\x1b", "'a\\nb'"}};  // a value is hangscan's repr: its backslashes stay
  return job;
}

TEST(TextWriter, NamesFromTargetsAreEscapedAndForgeNoLine) {
  JobSnapshot job = job_with_hostile_name();
  Analysis a = analyze(job, GroupOptions{});
  std::string text = write_text(job, &a, TextOptions{});
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find("\nSUSPECT rank 0"), std::string::npos);
  EXPECT_NE(text.find("\nSUSPECT rank 2 is not in all_reduce with ranks 0-1,3: it is in worker "
                      "(hang_gloo.py:19) -> time.sleep\\nSUSPECT rank 0\\x1b[2J;x\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n          s\\x1b = 'a\\nb'\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n└─[2] time.sleep\\nSUSPECT rank 0\\x1b[2J;x  <- suspect\n"),
            std::string::npos)
      << text;
}

TEST(GraphWriters, NamesFromTargetsAreEscaped) {
  JobSnapshot job = job_with_hostile_name();
  Analysis a = analyze(job, GroupOptions{});
  EXPECT_EQ(
      write_folded(job, GroupOptions{}),
      "<module>;worker;all_reduce 3\n<module>;worker;time.sleep\\nSUSPECT rank 0\\x1b[2J:x 1\n");
  std::string dot = write_dot(job, a);
  EXPECT_EQ(dot.find('\x1b'), std::string::npos);
  EXPECT_NE(dot.find("[label=\"time.sleep\\\\nSUSPECT rank 0\\\\x1b[2J;x\", style=filled"),
            std::string::npos)
      << dot;
}

}  // namespace
}  // namespace hangscan
