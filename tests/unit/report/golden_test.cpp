// Golden outputs: one fixed multi-rank job rendered by every writer (text, json, dot, folded and
// the agent wire format), compared byte for byte with files under tests/unit/fixtures/golden/.
//
// Why: the model's inner representation may change (stacks shared between threads, streaming
// readers), but what users and scripts read must not. The job is also read back from both JSON
// forms and rendered again: a reader that loses or reorders anything fails here.
// HS_GOLDEN_UPDATE=1 rewrites the files (only when the output is meant to change).
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "group/analysis.h"
#include "report/agent_format.h"
#include "report/json_reader.h"
#include "report/report_writers.h"

namespace hangscan {
namespace {

Frame py(std::string fn, std::string file, int line, std::string source = {}) {
  Frame f;
  f.kind = FrameKind::python;
  f.function = std::move(fn);
  f.file = std::move(file);
  f.line = line;
  if (!source.empty()) f.source = std::move(source);
  return f;
}

Frame native(std::string fn, std::string module, std::uint64_t offset, int line = 0) {
  Frame f;
  f.kind = FrameKind::native;
  f.function = std::move(fn);
  f.module = std::move(module);
  f.offset = offset;
  f.pc = 0x7f0000000000 + offset;
  f.build_id = "0badc0de";
  if (line) {
    f.file = "/src/gloo/allreduce.cc";
    f.line = line;
  }
  return f;
}

Frame kernel(std::string fn) {
  Frame f;
  f.kind = FrameKind::kernel;
  f.function = std::move(fn);
  return f;
}

std::vector<Frame> in_all_reduce() {
  Frame inl = native("gloo::detail::wait", "/usr/lib/libgloo.so", 0x1230, 88);
  inl.kind = FrameKind::inline_frame;
  return {native("__futex_abstimed_wait_common", "/lib/x86_64-linux-gnu/libc.so.6", 0x8a1f0),
          inl,
          native("gloo::allreduce", "/usr/lib/libgloo.so", 0x1300, 120),
          py("all_reduce", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
             1541, "work.wait()"),
          py("worker", "/tmp/hang_gloo.py", 20, "dist.all_reduce(t)"),
          py("<module>", "/tmp/hang_gloo.py", 30)};
}

std::vector<Frame> in_sleep() {
  Frame sleep;
  sleep.kind = FrameKind::python;
  sleep.function = "time.sleep";
  Frame worker = py("worker", "/tmp/hang_gloo.py", 19, "time.sleep(3600)");
  worker.locals = {{"rank", "7"}, {"t", "tensor([1.])"}};
  worker.column = 8;
  worker.end_line = 19;
  worker.end_column = 24;
  return {sleep, worker, py("<module>", "/tmp/hang_gloo.py", 30)};
}

ThreadSnapshot helper_thread(int tid) {
  ThreadSnapshot t;
  t.tid = tid;
  t.name = "pt_elastic";
  t.state = 'S';
  t.wchan = "futex_wait_queue";
  t.syscall = "futex";
  t.frames = {native("epoll_wait", "/lib/x86_64-linux-gnu/libc.so.6", 0xfe1d6),
              native("start_thread", "/lib/x86_64-linux-gnu/libc.so.6", 0x89134)};
  t.kernel_frames = {kernel("do_epoll_wait"), kernel("__x64_sys_epoll_wait")};
  t.cpu_ticks = 3;
  t.blocked_s = 41.5;
  return t;
}

std::string fmt_conn(int r) {
  return "10.0.0." + std::to_string(r / 4 + 1) + ":" + std::to_string(40000 + r) +
         " -> 10.0.0.9:29500";
}

ProcessSnapshot rank(int r, const std::string& host, bool odd) {
  ProcessSnapshot p;
  p.host = host;
  p.pid = 1000 + r;
  p.ppid = 900;
  p.start_ticks = 5000 + static_cast<std::uint64_t>(r);
  p.rank = r;
  p.world_size = 8;
  p.local_rank = r % 4;
  p.launcher = "torchrun";
  p.role = "rank";
  p.cmdline = {"python3", "/tmp/hang_gloo.py"};
  p.exe = "/usr/bin/python3.11";
  p.state = 'S';
  p.cpu_percent = odd ? 0.0 : 99.5;
  p.python = PythonInfo{"3.11.2", false, "debug_offsets", false, false};
  p.captured_at = 1700000000.25;
  p.memory = MemoryUsage{std::uint64_t{1} << 30, std::uint64_t{3} << 29, "/slurm/job42", {}, {}};
  p.pause_us = 180 + r;
  p.tcp_connections = {fmt_conn(r)};
  if (r == 1) p.container = ContainerInfo{"podman", std::string(64, 'a'), "trainer-1", ""};
  if (r == 2) {
    p.container = ContainerInfo{"containerd", std::string(64, 'b'), "",
                                "1f2e3d4c-5b6a-7980-1a2b-3c4d5e6f7a8b"};
  }
  ThreadSnapshot main;
  main.tid = p.pid;
  main.name = "python3";
  main.state = odd ? 'S' : 'R';
  main.syscall = odd ? "clock_nanosleep" : "futex";
  main.is_main = true;
  main.gil = true;
  main.python_name = "MainThread";
  main.cpu_ticks = 100 + static_cast<std::uint64_t>(r);
  main.frames = odd ? in_sleep() : in_all_reduce();
  if (!odd) {
    main.waits_on = {
        WaitEdge{"n2", 1005, 5, "tcp 10.0.0.1:40312 -> 10.0.0.2:29502"},
    };
    main.blocked_s = 12.0;
  }
  p.threads.push_back(std::move(main));
  p.threads.push_back(helper_thread(p.pid + 100));
  return p;
}

JobSnapshot golden_job() {
  JobSnapshot job;
  job.job_id = "42";
  job.expected_world_size = 8;
  for (int r = 0; r < 8; ++r) {
    if (r == 6) continue;  // a missing rank
    job.processes.push_back(rank(r, r < 4 ? "n1" : "n2", r == 7));
  }
  // A crashed rank's leftovers and a launcher, not grouped with the ranks.
  ProcessSnapshot launcher;
  launcher.host = "n1";
  launcher.pid = 900;
  launcher.role = "launcher";
  launcher.launcher = "torchrun";
  launcher.cmdline = {"torchrun", "--nproc-per-node=4", "/tmp/hang_gloo.py"};
  launcher.state = 'S';
  launcher.threads.push_back(helper_thread(900));
  launcher.threads.back().is_main = true;
  launcher.threads.back().notes = {"unwind stopped: no CFI for 0x7f0000001234"};
  launcher.threads.back().incomplete = true;
  launcher.diagnostics.push_back({Diagnostic::Severity::warning,
                                  "no debug info for libgloo.so",
                                  "install libgloo-dbg",
                                  "n1",
                                  900,
                                  {}});
  job.processes.push_back(launcher);
  Death d;
  d.how = "oom-kill";
  d.signal = 9;
  d.signal_name = "SIGKILL";
  d.at = 1699999990.5;
  d.cgroup = "/slurm/job42";
  d.limit_bytes = std::uint64_t{8} << 30;
  d.rss_bytes = std::uint64_t{7} << 30;
  d.evidence = {"kernel log"};
  d.pid = 1006;
  d.comm = "python3";
  d.host = "n2";
  d.rank = 6;
  job.deaths.push_back(d);
  job.unreachable.push_back({"n3", "ssh: connect to host n3 port 22: Connection refused"});
  job.diagnostics.push_back(
      {Diagnostic::Severity::error, "node n3 did not answer", "check slurmd on n3", "n3", {}, {}});
  return job;
}

// The agent document names the commit that built it: the one thing that may differ.
std::string without_commit(std::string doc) {
  const std::string key = "\"agent_commit\":\"";
  auto at = doc.find(key);
  if (at == std::string::npos) return doc;
  auto end = doc.find('"', at + key.size());
  return doc.replace(at + key.size(), end - at - key.size(), "COMMIT");
}

std::string golden_dir() { return std::string(HS_SOURCE_DIR) + "/tests/unit/fixtures/golden/"; }

// Compares `actual` with the golden file `name` (or rewrites it under HS_GOLDEN_UPDATE=1).
void expect_golden(const std::string& name, const std::string& actual) {
  std::string path = golden_dir() + name;
  const char* update = std::getenv("HS_GOLDEN_UPDATE");
  if (update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path << " (HS_GOLDEN_UPDATE=1 writes it)";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), actual) << "output differs from " << path;
}

void expect_all_writers(const JobSnapshot& job, const std::string& prefix) {
  setenv("TZ", "UTC", 1);  // times of death are shown in local time
  tzset();
  Analysis a = analyze(job, GroupOptions{});
  for (const ReportWriter& w : report_writers()) {
    if (!w.filter.empty()) continue;  // svg is dot piped through Graphviz
    RenderOptions ro;
    expect_golden(prefix + "report." + w.extension, w.render(job, a, ro));
    if (w.name == "text") {
      ro.all_threads = false;
      ro.width = 100;
      expect_golden(prefix + "report.main-only." + w.extension, w.render(job, a, ro));
    }
  }
  GroupOptions all;
  all.threads = GroupOptions::Threads::all;
  all.granularity = GroupOptions::Granularity::function_line;
  Analysis b = analyze(job, all);
  expect_golden(prefix + "report.all-threads.txt",
                find_report_writer("text")->render(job, b, RenderOptions{}));
  expect_golden(prefix + "report.all-threads.json",
                find_report_writer("json")->render(job, b, RenderOptions{}));
}

TEST(Golden, EveryWriterByteForByte) {
  JobSnapshot job = golden_job();
  expect_all_writers(job, "");
  expect_golden("agent.json", without_commit(write_agent_json(job)));
}

// The same outputs after a round trip through each JSON form (the front end's path).
TEST(Golden, ReadBackRendersTheSame) {
  JobSnapshot job = golden_job();
  auto from_agent = read_job_json(write_agent_json(job));
  ASSERT_TRUE(from_agent.ok()) << from_agent.error().message;
  expect_all_writers(*from_agent, "");
  expect_golden("agent.json", without_commit(write_agent_json(*from_agent)));
  Analysis a = analyze(job, GroupOptions{});
  auto from_report = read_job_json(find_report_writer("json")->render(job, a, RenderOptions{}));
  ASSERT_TRUE(from_report.ok()) << from_report.error().message;
  expect_all_writers(*from_report, "");
}

// Node documents merged by the front end render as the job they came from.
TEST(Golden, MergedNodeDocumentsRenderTheSame) {
  JobSnapshot job = golden_job();
  std::vector<JobSnapshot> parts(2);
  for (const ProcessSnapshot& p : job.processes)
    parts[p.host == "n1" ? 0 : 1].processes.push_back(p);
  parts[0].job_id = job.job_id;
  parts[0].expected_world_size = job.expected_world_size;
  parts[1].deaths = job.deaths;
  parts[1].unreachable = job.unreachable;
  parts[1].diagnostics = job.diagnostics;
  std::vector<JobSnapshot> read;
  for (const JobSnapshot& part : parts) {
    auto r = read_job_json(write_agent_json(part));
    ASSERT_TRUE(r.ok()) << r.error().message;
    read.push_back(std::move(*r));
  }
  JobSnapshot merged = merge_job_snapshots(std::move(read));
  // Node order puts n1's processes (launcher included) first.
  std::stable_sort(job.processes.begin(), job.processes.end(),
                   [](const ProcessSnapshot& x, const ProcessSnapshot& y) {
                     return (x.host == "n1") > (y.host == "n1");
                   });
  Analysis a = analyze(job, GroupOptions{});
  Analysis b = analyze(merged, GroupOptions{});
  for (const ReportWriter& w : report_writers()) {
    if (!w.filter.empty()) continue;
    EXPECT_EQ(w.render(job, a, RenderOptions{}), w.render(merged, b, RenderOptions{})) << w.name;
  }
}

}  // namespace
}  // namespace hangscan
