// The fast agent reader and its tokenizer: exact values at the edges of JSON, and the one rule
// that makes it safe: whatever it accepts, the reference reader accepts with the same result;
// whatever it declines, read_job_json words exactly as the reference reader does.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "../group/job_builder.h"
#include "report/agent_format.h"
#include "report/agent_reader.h"
#include "report/json_cursor.h"
#include "report/json_reader.h"
#include "report/json_writer.h"

namespace hangscan {
namespace {

using namespace hangscan::testing;

// A node document with every field the fast reader reads itself.
JobSnapshot node_job() {
  JobSnapshot job;
  job.job_id = "77";
  job.expected_world_size = 4;
  for (int r = 0; r < 2; ++r) {
    ProcessSnapshot p =
        rank_process(r, 100 + r, r == 1 ? in_sleep() : in_all_reduce(), 'S', "n\"1\\", 4);
    p.ppid = 99;
    p.start_ticks = 81234567ULL;
    p.local_rank = r;
    p.launcher = "torchrun";
    p.cmdline = {"python3", "train.py", "--tag=\t\u00fc\U0001F600"};
    p.cpu_percent = r == 1 ? 97.25 : -1;
    p.progress = "stuck";
    p.captured_at = 1700000000.125;
    p.pause_us = 812;
    p.python = PythonInfo{"3.11.2", r == 1, "elf-symbol", false, r == 0};
    p.memory = MemoryUsage{1ull << 30, 2ull << 30, "/slurm/job_1", std::nullopt, 4ull << 30, {}};
    p.tcp_connections = {"10.0.0.1:1 -> 10.0.0.2:2"};
    ThreadSnapshot& t = p.threads[0];
    t.wchan = "futex_wait_queue";
    t.syscall = "futex";
    t.gil = r == 0;
    t.python_idle = false;
    t.python_name = "MainThread";
    t.cpu_ticks = 12345678901ULL;
    t.blocked_s = 2.5;
    t.notes = {"unwind stopped"};
    t.waits_on = {WaitEdge{"n2", 1005, 5, "tcp"}, WaitEdge{"", {}, {}, "pipe"}};
    t.frames[0].locals = {{"i", "41"}, {"name", "'\u00fc'"}};
    t.frames[0].column = 8;
    t.frames[0].end_line = 20;
    t.frames[0].end_column = 22;
    t.frames[0].source = "        dist.barrier()";
    Frame nat = native("__futex_abstimed_wait", "/lib/libc.so.6", 0x8a4d);
    nat.pc = std::numeric_limits<std::uint64_t>::max();
    nat.line = std::numeric_limits<int>::min();
    nat.build_id = "ab12cd";
    t.native_frames = {nat};
    Frame k;
    k.kind = FrameKind::kernel;
    k.function = "futex_wait_queue";
    t.kernel_frames = {k};
    p.diagnostics.push_back({Diagnostic::Severity::info, "nonblocking", "", "n1", 100, -3});
    job.processes.push_back(std::move(p));
  }
  job.unreachable.push_back({"n3", "no answer"});
  job.diagnostics.push_back({Diagnostic::Severity::error, "pid 99 gone", "", "", 99, {}});
  return job;
}

std::string rendered(const JobSnapshot& job) {
  return write_json(job, nullptr, -1) + write_agent_json(job);
}

// The rule, for one input: accepted by the fast reader => the reference reader gives the same
// job; and read_job_json answers exactly as the reference reader does. Returns whether the
// fast reader accepted it.
bool holds_to_reference(const std::string& doc, const ReadLimits& limits = {}) {
  SharedStacks shared;
  auto fast = read_agent_fast(doc, limits, shared);
  auto ref = read_job_json_reference(doc, limits);
  auto both = read_job_json(doc, limits);
  EXPECT_EQ(both.ok(), ref.ok());
  if (!both.ok() && !ref.ok()) {
    EXPECT_EQ(both.error().message, ref.error().message);
  }
  if (fast) {
    EXPECT_TRUE(ref.ok()) << "the fast reader accepted what the reference rejects: "
                          << ref.error().message << "\n"
                          << doc.substr(0, 400);
    if (ref.ok()) {
      EXPECT_EQ(rendered(*fast), rendered(*ref)) << doc.substr(0, 400);
    }
  }
  return fast.has_value();
}

TEST(AgentReader, ReadsANodeDocumentExactlyAsTheReferenceReader) {
  const std::string doc = write_agent_json(node_job());
  EXPECT_TRUE(holds_to_reference(doc));
  SharedStacks shared;
  auto job = read_agent_fast(doc, {}, shared);
  ASSERT_TRUE(job);
  EXPECT_EQ(rendered(*job), rendered(node_job()));
  EXPECT_EQ(job->processes[0].cmdline[2], "--tag=\t\u00fc\U0001F600");
  EXPECT_EQ(job->processes[0].host, "n\"1\\");
  EXPECT_EQ(job->processes[0].threads[0].native_frames[0].pc,
            std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(job->processes[0].threads[0].native_frames[0].line, std::numeric_limits<int>::min());
}

TEST(AgentReader, ReadsDeaths) {
  JobSnapshot job = node_job();
  Death d;
  d.how = "oom-kill";
  d.signal = 9;
  d.signal_name = "SIGKILL";
  d.exit_code = 255;
  d.core_dumped = true;
  d.at = 1699999990.5;
  d.cgroup = "/slurm/job42";
  d.limit_bytes = std::uint64_t{8} << 30;
  d.rss_bytes = 0;
  d.detail = "at 0 ip 7f";
  d.core = "/tmp/core.1";
  d.evidence = {"kernel log", "sacct"};
  d.pid = 1006;
  d.comm = "python3";
  d.host = "n2";
  d.rank = 6;
  d.slurm_step = "42.0";
  d.slurm_state = "OUT_OF_MEMORY";
  d.slurm_exit_code = "0:125";
  job.deaths = {d, Death{}};
  job.processes[1].death = d;
  const std::string doc = write_agent_json(job);
  ASSERT_TRUE(holds_to_reference(doc));
  SharedStacks shared;
  auto read = read_agent_fast(doc, {}, shared);
  ASSERT_TRUE(read);
  ASSERT_EQ(read->deaths.size(), 2u);
  EXPECT_EQ(read->deaths[0], d);
  EXPECT_EQ(read->deaths[1], Death{});
  ASSERT_TRUE(read->processes[1].death);
  EXPECT_EQ(*read->processes[1].death, d);
  // Damage to a death reads as the reference reader has it.
  for (std::size_t pos = doc.find("\"deaths\""); pos < doc.find("\"diagnostics\""); ++pos) {
    for (char b : {'"', '9', '-', '}', 'n'}) {
      std::string m = doc;
      m[pos] = b;
      holds_to_reference(m);
    }
  }
}

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The golden agent document (deaths, diagnostics, unreachable nodes, locals, positions) is read
// by the fast reader, so the golden tests' byte-for-byte outputs come through it.
TEST(AgentReader, ReadsTheGoldenAgentDocument) {
  const std::string doc =
      file_text(std::string(HS_SOURCE_DIR) + "/tests/unit/fixtures/golden/agent.json");
  ASSERT_FALSE(doc.empty());
  EXPECT_TRUE(holds_to_reference(doc));
}

TEST(AgentReader, AnyMemberOrderAndEscapedKeys) {
  const std::string doc =
      R"({"schema":"hangscan-agent/1","strings":["f\u00fc\ud83d\ude00","a\/b\"\\\b\f\n\r\t"],)"
      R"("stacks":[[0,1]],"frames":[[2,0,1,-7],[0,1]],"pro\u0063esses":[{"pid":1,)"
      R"("threads":[{"native_frames":0,"tid":1,"frames":0,"kernel_frames":0}]}]})";
  ASSERT_TRUE(holds_to_reference(doc));
  SharedStacks shared;
  auto job = read_agent_fast(doc, {}, shared);
  ASSERT_TRUE(job);
  const Frame& f = job->processes[0].threads[0].frames[0];
  EXPECT_EQ(f.function, "f\u00fc\U0001F600");
  EXPECT_EQ(f.file, "a/b\"\\\b\f\n\r\t");
  EXPECT_EQ(f.line, -7);
}

TEST(AgentReader, DeclinesWhatItLeavesToTheReferenceReader) {
  JobSnapshot job = node_job();
  job.processes[0].asyncio_tasks.push_back(AsyncioTask{"t", 0x10, {}, std::nullopt, ""});
  EXPECT_FALSE(holds_to_reference(write_agent_json(job)));
  job = node_job();
  job.processes[1].core = CoreInfo{};
  EXPECT_FALSE(holds_to_reference(write_agent_json(job)));
  // A plain hangscan/1 document.
  EXPECT_FALSE(holds_to_reference(write_json(node_job(), nullptr)));
  // A repeated member (the reference reader keeps the last).
  EXPECT_FALSE(
      holds_to_reference(R"({"schema":"hangscan-agent/1","strings":[],"frames":[],"stacks":[],)"
                         R"("processes":[{"pid":1,"pid":2}]})"));
}

JsonCursor::Number number_of(const std::string& text) {
  JsonCursor c(text, 4);
  JsonCursor::Number n = c.number();
  c.finish();
  return n;
}

bool stops(const std::string& text) {
  JsonCursor c(text, 4);
  try {
    c.skip();
    c.finish();
  } catch (const JsonCursor::Stop&) {
    return true;
  }
  return false;
}

TEST(JsonCursor, NumbersAtTheLimits) {
  using T = JsonCursor::Number::Type;
  auto u = number_of("18446744073709551615");
  EXPECT_EQ(u.type, T::unsigned_int);
  EXPECT_EQ(u.u, std::numeric_limits<std::uint64_t>::max());
  auto i = number_of("-9223372036854775808");
  EXPECT_EQ(i.type, T::integer);
  EXPECT_EQ(i.i, std::numeric_limits<std::int64_t>::min());
  auto z = number_of("-0");
  EXPECT_EQ(z.type, T::integer);
  EXPECT_EQ(z.i, 0);
  EXPECT_EQ(number_of("1.7976931348623157e308").d, std::numeric_limits<double>::max());
  EXPECT_EQ(number_of("0.1").d, 0.1);
  EXPECT_EQ(number_of("25E-1").d, 2.5);
  EXPECT_EQ(number_of("1e+2").type, T::floating);
  for (const char* bad : {"18446744073709551616", "-9223372036854775809", "1e309", "-1e309", "01",
                          "1.", ".5", "-", "1e", "1e+", "+1", "0x10", "1.e5", "--1", "NaN"}) {
    EXPECT_TRUE(stops(bad)) << bad;
  }
}

TEST(JsonCursor, StringsEscapesAndUtf8) {
  auto str = [](const std::string& text) {
    JsonCursor c(text, 4);
    std::string s(c.string());
    c.finish();
    return s;
  };
  EXPECT_EQ(str(R"("plain")"), "plain");
  EXPECT_EQ(str(R"("\u0041\u00e9\u20ac\ud834\udd1e")"), "A\u00e9\u20ac\U0001D11E");
  EXPECT_EQ(str(R"("\uDBFF\uDFFF")"), "\U0010FFFF");
  EXPECT_EQ(str(std::string("\"a\\u0000b\"")), std::string("a\0b", 3));
  EXPECT_EQ(str("\"\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80\""), "\u00fc\u20ac\U0001F600");
  EXPECT_EQ(str(R"("x\\y\"z")"), "x\\y\"z");
  for (const std::string bad : {R"("\ud800")",
                                R"("\ud800x")",
                                R"("\ud800\u0041")",
                                R"("\udc00")",
                                R"("\u12")",
                                R"("\u12g4")",
                                R"("\x")",
                                "\"a\tb\"",
                                "\"\x01\"",
                                "\"\xc0\x80\"",
                                "\"\xc1\xbf\"",
                                "\"\xe0\x80\x80\"",
                                "\"\xed\xa0\x80\"",
                                "\"\xf0\x80\x80\x80\"",
                                "\"\xf4\x90\x80\x80\"",
                                "\"\xf5\x80\x80\x80\"",
                                "\"\x80\"",
                                "\"\xc3\"",
                                "\"\xe2\x82\"",
                                "\"abc",
                                "\"\\"}) {
    EXPECT_TRUE(stops(bad)) << bad;
  }
}

TEST(JsonCursor, StructureDepthAndTrailingBytes) {
  EXPECT_FALSE(stops(R"( {"a" : [1, {"b":null}, true, false] } )"));
  EXPECT_TRUE(stops(R"({"a":1,})"));
  EXPECT_TRUE(stops(R"([1,])"));
  EXPECT_TRUE(stops(R"([1 2])"));
  EXPECT_TRUE(stops(R"({"a" 1})"));
  EXPECT_TRUE(stops(R"({1:1})"));
  EXPECT_TRUE(stops(R"([] [])"));
  EXPECT_TRUE(stops("\xef\xbb\xbf[]"));  // no byte order mark
  EXPECT_TRUE(stops(R"([nul])"));
  EXPECT_TRUE(stops(R"([truex])"));
  EXPECT_FALSE(stops("[[[[1]]]]"));  // depth 4: the limit
  EXPECT_TRUE(stops("[[[[[1]]]]]"));
}

// A node killed mid-write: every prefix is declined and worded as the reference reader does.
TEST(AgentReader, EveryTruncationIsACleanError) {
  const std::string doc = write_agent_json(node_job());
  ASSERT_EQ(doc.back(), '\n');
  for (std::size_t cut = 0; cut + 1 < doc.size(); ++cut) {
    EXPECT_FALSE(holds_to_reference(doc.substr(0, cut))) << cut;
    EXPECT_FALSE(read_job_json(doc.substr(0, cut)).ok()) << cut;
  }
}

// Every byte of a node document replaced by bytes that break it in different ways.
TEST(AgentReader, SingleByteDamageNeverDiffersFromTheReference) {
  const std::string doc = write_agent_json(node_job());
  std::size_t accepted = 0;
  for (std::size_t pos = 0; pos < doc.size(); ++pos) {
    for (char b : {'"', '9', '-', '}', '\\', '\x80'}) {
      std::string m = doc;
      m[pos] = b;
      accepted += holds_to_reference(m) ? 1 : 0;
    }
  }
  EXPECT_GT(accepted, 0u);  // some damage still reads (a digit in a number, a space)
}

TEST(AgentReader, LimitsAreTheReferenceReadersLimits) {
  const std::string doc = write_agent_json(node_job());
  for (int k = 0; k < 8; ++k) {
    ReadLimits l;
    switch (k) {
      case 0:
        l.max_depth = 4;
        break;
      case 1:
        l.max_string = 8;
        break;
      case 2:
        l.max_list = 1;
        break;
      case 3:
        l.max_threads = 0;
        break;
      case 4:
        l.max_processes = 1;
        break;
      case 5:
        l.max_frames = 2;
        break;
      case 6:
        l.max_total_frames = 5;
        break;
      default:
        l.max_table = 3;
        break;
    }
    EXPECT_FALSE(holds_to_reference(doc, l)) << k;
    EXPECT_FALSE(read_job_json(doc, l).ok()) << k;
  }
}

// The hostile corpus of the fuzz target, whole, truncated and damaged.
TEST(AgentReader, FuzzCorpusHoldsToTheReference) {
  const std::filesystem::path dir = std::string(HS_SOURCE_DIR) + "/tests/fuzz/corpus";
  ReadLimits limits;  // the fuzz target's: an expansion bomb stays small
  limits.max_bytes = 1u << 20;
  limits.max_total_frames = 1u << 16;
  limits.max_processes = 1u << 12;
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string doc = file_text(e.path());
    ++files;
    const bool accepted = holds_to_reference(doc, limits);
    if (e.path().filename() == "valid_agent.json") {
      EXPECT_TRUE(accepted);  // else the comparisons below would hold trivially
    }
    const std::size_t step = doc.size() / 64 + 1;
    for (std::size_t cut = 0; cut < doc.size(); cut += step) {
      holds_to_reference(doc.substr(0, cut), limits);
    }
    for (std::size_t pos = 0; pos < doc.size(); pos += step) {
      std::string m = doc;
      m[pos] = static_cast<char>(m[pos] ^ 0x20);
      holds_to_reference(m, limits);
    }
  }
  EXPECT_GT(files, 10u);
}

}  // namespace
}  // namespace hangscan
