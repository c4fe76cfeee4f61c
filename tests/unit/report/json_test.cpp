#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../group/job_builder.h"
#include "report/agent_format.h"
#include "report/json_reader.h"
#include "report/json_writer.h"

namespace hangscan {
namespace {

using namespace hangscan::testing;
using nlohmann::json;

// A job that sets every field of the model at least once.
JobSnapshot rich_job() {
  JobSnapshot job;
  job.job_id = "4242";
  job.expected_world_size = 4;
  for (int r = 0; r < 4; ++r) {
    ProcessSnapshot p =
        rank_process(r, 100 + r, r == 2 ? in_sleep() : in_all_reduce(), 'S', "n1", 4);
    p.ppid = 99;
    p.start_ticks = 81234567ULL + static_cast<std::uint64_t>(r);
    p.local_rank = r;
    p.launcher = "torchrun";
    p.cmdline = {"python3", "train.py", "--x=\"q\""};
    p.exe = "/usr/bin/python3.11";
    p.cpu_percent = r == 1 ? 97.5 : -1;
    p.progress = r == 1 ? std::optional<std::string>("stuck") : std::nullopt;
    p.pause_us = 812;
    p.python = PythonInfo{"3.11.2", r == 3, "elf-symbol", r == 0, r == 0};
    ThreadSnapshot& t = p.threads[0];
    t.wchan = "futex_wait_queue";
    t.syscall = "futex";
    t.gil = false;
    t.python_idle = false;
    t.cpu_ticks = 12345678901ULL;
    t.incomplete = r == 1;
    t.frames[1].locals = {{"i", "41"}, {"name", "'ü'"}};
    t.frames[1].column = 8;
    t.frames[1].end_line = 20;
    t.frames[1].end_column = 22;
    t.frames[1].source = "        dist.barrier()  # ü";
    t.python_name = r == 0 ? std::optional<std::string>("MainThread") : std::nullopt;
    t.gc_collecting = r == 0;
    t.finalizing = r == 0;
    Frame nat =
        native("__futex_abstimed_wait_common64", "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x8a4d);
    nat.pc = 0x7f3c1a2b3c4dULL;
    nat.file = "./nptl/futex-internal.c";
    nat.line = 57;
    nat.build_id = "ab12cd";
    Frame inl = nat;
    inl.kind = FrameKind::inline_frame;
    inl.function = "futex_wait";
    t.native_frames = {inl, nat};
    Frame k;
    k.kind = FrameKind::kernel;
    k.function = "futex_wait_queue";
    t.kernel_frames = {k};
    t.notes = {"unwind stopped: no CFI"};
    ThreadSnapshot helper;
    helper.tid = 1000 + r;
    helper.name = "pt_elastic";
    helper.state = 'R';
    helper.frames = in_all_reduce();
    p.threads.push_back(helper);
    p.diagnostics.push_back(
        {Diagnostic::Severity::info, "python read nonblocking", "", "n1", 100 + r, std::nullopt});
    if (r == 0) {
      AsyncioTask task;
      task.name = "consumer";
      task.address = 0x7f3c19a0b4c0ULL;
      task.awaits_task = "producer";
      task.awaits = "_asyncio.Task";
      task.coroutines = {p.threads[0].frames[1]};
      p.asyncio_tasks = {task, AsyncioTask{"Task-7", 0x10, {}, std::nullopt, ""}};
    }
    job.processes.push_back(std::move(p));
  }
  ProcessSnapshot crashed;
  crashed.host = "n1";
  crashed.pid = 300;
  crashed.role = "helper";
  CoreInfo ci;
  ci.path = "/tmp/core.300";
  ci.signal = SignalInfo{11, "SIGSEGV", 0x0, 1};
  ci.crashed_tid = 300;
  ci.annotations = {"NULL pointer dereference"};
  ci.omitted = {"anonymous mappings above 64 MB"};
  crashed.core = ci;
  job.processes.push_back(crashed);
  job.processes[0].memory =
      MemoryUsage{1ull << 30, 2ull << 30, "/slurm/job_1", 3ull << 30, 4ull << 30, 5ull << 30};
  Death oom;
  oom.how = "oom-kill";
  oom.host = "n2";
  oom.pid = 4725;
  oom.evidence = {"kernel log", "sacct"};
  oom.slurm_step = "4242.1";
  oom.slurm_state = "OUT_OF_MEMORY";
  oom.slurm_exit_code = "0:125";
  job.deaths.push_back(oom);
  job.unreachable.push_back({"n3", "no answer within 30 s"});
  job.diagnostics.push_back({Diagnostic::Severity::error, "pid 99: no such process",
                             "check the pid", "", 99, std::nullopt});
  return job;
}

TEST(JsonWriter, FieldsFollowTheSchema) {
  JobSnapshot job = rich_job();
  Analysis a = analyze(job, GroupOptions{});
  json doc = json::parse(write_json(job, &a));
  EXPECT_EQ(doc["schema"], "hangscan/1");
  EXPECT_EQ(doc["job_id"], "4242");
  const json& p2 = doc["processes"][2];
  EXPECT_EQ(p2["rank"], 2);
  EXPECT_EQ(p2["world_size"], 4);
  EXPECT_EQ(p2["state"], "S");
  EXPECT_EQ(p2["start_ticks"], 81234569);
  EXPECT_EQ(p2["threads"][0]["incomplete"], false);
  EXPECT_EQ(doc["processes"][1]["threads"][0]["incomplete"], true);
  EXPECT_TRUE(p2["cpu_percent"].is_null());
  EXPECT_TRUE(p2["progress"].is_null());
  EXPECT_TRUE(p2["core"].is_null());
  EXPECT_EQ(p2["python"], json({{"version", "3.11.2"},
                                {"nonblocking", false},
                                {"locator", "elf-symbol"},
                                {"finalizing", false},
                                {"gc_collecting", false}}));
  EXPECT_EQ(doc["processes"][0]["python"]["finalizing"], true);
  const json& task = doc["processes"][0]["asyncio_tasks"][0];
  EXPECT_EQ(task["name"], "consumer");
  EXPECT_EQ(task["address"], "0x7f3c19a0b4c0");
  EXPECT_EQ(task["awaits_task"], "producer");
  EXPECT_EQ(task["awaits"], "_asyncio.Task");
  EXPECT_EQ(task["coroutines"][0]["line"], 20);
  EXPECT_EQ(doc["processes"][0]["asyncio_tasks"][1]["awaits"], nullptr);
  EXPECT_EQ(doc["processes"][0]["asyncio_tasks"][1]["coroutines"], json::array());
  EXPECT_EQ(p2["asyncio_tasks"], json::array());
  EXPECT_EQ(doc["processes"][0]["threads"][0]["python_name"], "MainThread");
  EXPECT_EQ(doc["processes"][0]["threads"][0]["gc_collecting"], true);
  EXPECT_EQ(p2["threads"][0]["python_name"], nullptr);
  EXPECT_EQ(p2["threads"][0]["finalizing"], false);
  EXPECT_EQ(p2["threads"][0]["frames"][1]["column"], 8);
  EXPECT_EQ(p2["threads"][0]["frames"][1]["end_line"], 20);
  EXPECT_EQ(p2["threads"][0]["frames"][1]["source"], "        dist.barrier()  # ü");
  EXPECT_EQ(doc["processes"][1]["cpu_percent"], 97.5);
  const json& nat = p2["threads"][0]["native_frames"][1];
  EXPECT_EQ(nat["kind"], "native");
  EXPECT_EQ(nat["pc"], "0x7f3c1a2b3c4d");
  EXPECT_EQ(nat["offset"], "0x8a4d");
  EXPECT_EQ(nat["build_id"], "ab12cd");
  EXPECT_EQ(p2["threads"][0]["native_frames"][0]["kind"], "inline");
  const json& pyf = p2["threads"][0]["frames"][0];
  EXPECT_EQ(
      pyf,
      json::parse(R"({"kind":"python","function":"time.sleep","file":null,"line":null,"module":"",
                                 "pc":null,"offset":null,"build_id":null,"locals":[],
                                 "column":null,"end_line":null,"end_column":null,"source":null})"));
  EXPECT_EQ(doc["processes"][4]["signal"],
            json::parse(R"({"number":11,"name":"SIGSEGV","address":"0x0","code":1})"));
  EXPECT_EQ(doc["processes"][4]["rank"], nullptr);
  EXPECT_EQ(doc["suspects"], json::parse("[2]"));
  EXPECT_EQ(doc["missing_ranks"], json::array());
  EXPECT_EQ(doc["groups"][0]["ranks"], json::parse("[2]"));
  EXPECT_EQ(doc["groups"][0]["suspect"], true);
  EXPECT_EQ(doc["groups"][1]["pids"], json::parse("[100,101,103]"));
  EXPECT_EQ(doc["groups"][1]["hosts"], json::parse(R"(["n1"])"));
  EXPECT_EQ(doc["groups"][1]["frames"][0]["function"], "all_reduce");
  EXPECT_EQ(doc["suspect_reasons"][0],
            "rank 2 is not in all_reduce with ranks 0-1,3: it is in worker (hang_gloo.py:19) -> "
            "time.sleep");
  EXPECT_EQ(doc["suspect_members"], json::parse(R"([{"host":"n1","pid":102,"rank":2}])"));
  EXPECT_EQ(doc["unreachable"], json::parse(R"([{"host":"n3","reason":"no answer within 30 s"}])"));
  EXPECT_EQ(
      doc["grouping"],
      json::parse(R"({"threads":"main","granularity":"function","top_n":0,"thread_regex":null})"));
  json plain = json::parse(write_json(job, nullptr));
  EXPECT_TRUE(plain["groups"].is_null());
  EXPECT_TRUE(plain["suspects"].is_null());
}

TEST(JsonWriter, FindingsAreDataBesideTheSentences) {
  JobSnapshot job;
  for (int r = 0; r < 4; ++r)
    job.processes.push_back(rank_process(r, 100 + r, r == 2 ? in_sleep() : in_all_reduce()));
  job.processes.push_back(rank_process(5, 105, in_all_reduce(), 'T'));
  job.expected_world_size = 6;
  Analysis a = analyze(job, GroupOptions{});
  json doc = json::parse(write_json(job, &a));
  EXPECT_EQ(doc["suspect_reasons"].size(), 3u);
  EXPECT_EQ(doc["findings"], json::parse(R"([
    {"kind":"divergence","members":[2],"others":[0,1,3,4],"ranks":[2],"hosts":[],
     "frames":[{"function":"worker","file":"/tmp/hang_gloo.py","line":19},
               {"function":"time.sleep","file":null,"line":null}],
     "place":{"function":"all_reduce","line":1541,
              "file":"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py"},
     "figures":{"no_stack":false,"frames_left_out":false}},
    {"kind":"bad_state","members":[4],"others":[],"ranks":[5],"hosts":[],"frames":[],
     "place":null,"figures":{"state":"T","wchan":null}},
    {"kind":"missing_ranks","members":[],"others":[],"ranks":[4],"hosts":[],"frames":[],
     "place":null,"figures":{"world_size":6}}])"));
  // Without an analysis the key is null, and agent documents do not carry it.
  EXPECT_TRUE(json::parse(write_json(job, nullptr))["findings"].is_null());
  EXPECT_FALSE(json::parse(write_agent_json(job)).contains("findings"));
}

TEST(JsonWriter, NotesAreFindingsToo) {
  JobSnapshot job;
  std::vector<Frame> barrier = in_all_reduce();
  barrier[0].function = "barrier";
  for (int r = 0; r < 4; ++r)
    job.processes.push_back(rank_process(r, 100 + r, r < 2 ? in_all_reduce() : barrier));
  Analysis a = analyze(job, GroupOptions{});
  json doc = json::parse(write_json(job, &a));
  EXPECT_EQ(doc["notes"],
            json::parse(R"(["no clear majority: below worker, ranks 0-1 are in )"
                        R"(all_reduce and ranks 2-3 are in barrier; no suspect named"])"));
  const std::string c10d = "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py";
  EXPECT_EQ(doc["findings"], json::parse(R"([
    {"kind":"no_majority","members":[],"others":[],"ranks":[],"hosts":[],
     "frames":[{"function":"all_reduce","file":")" +
                                         c10d + R"(","line":1541},
               {"function":"barrier","file":")" +
                                         c10d + R"(","line":1541}],
     "place":{"function":"worker","file":"/tmp/hang_gloo.py","line":20},
     "figures":{"branches":2,"parts":[[0,1],[2,3]],"ends":[false,false]}}])"));
  // One stack for all, Python frames and no locals read, and a world size too large to list.
  job.processes.resize(2);
  job.expected_world_size = 2000000000;
  Analysis same = analyze(job, GroupOptions{});
  json kinds = json::array();
  json same_doc = json::parse(write_json(job, &same));
  for (const json& f : same_doc["findings"]) kinds.push_back({f["kind"], f["figures"]});
  EXPECT_EQ(kinds, json::parse(R"([["same_stack",{"count":2,"ranked":true}],
                                   ["implausible_world_size",{"world_size":2000000000}],
                                   ["locals_hint",{}]])"));
  EXPECT_EQ(same_doc["notes"].size(), 3u);
}

TEST(JsonReader, RoundTripsTheOutputDocument) {
  JobSnapshot job = rich_job();
  std::string text = write_json(job, nullptr);
  auto back = read_job_json(text);
  ASSERT_TRUE(back.ok()) << back.error().what();
  EXPECT_EQ(write_json(*back, nullptr), text);
  EXPECT_EQ(back->processes[2].threads[0].native_frames[1].pc, 0x7f3c1a2b3c4dULL);
  EXPECT_EQ(back->processes[2].threads[0].cpu_ticks, 12345678901ULL);
  EXPECT_EQ(back->processes[2].start_ticks, 81234569ULL);
  EXPECT_TRUE(back->processes[1].threads[0].incomplete);
  EXPECT_FALSE(back->processes[2].threads[0].incomplete);
  EXPECT_EQ(back->processes[4].core->signal->address, 0u);
  EXPECT_EQ(back->processes[1].cpu_percent, 97.5);
  EXPECT_EQ(back->processes[0].cpu_percent, -1);
  EXPECT_EQ(back->processes[0].memory->gpu_bytes, 5ull << 30);
  EXPECT_EQ(back->deaths, job.deaths);
  // A document with analysis fields reads the same snapshot back.
  Analysis a = analyze(job, GroupOptions{});
  auto with_groups = read_job_json(write_json(job, &a, -1));
  ASSERT_TRUE(with_groups.ok());
  EXPECT_EQ(write_json(*with_groups, nullptr), text);
}

TEST(AgentFormat, InternsStacksAndRoundTrips) {
  JobSnapshot job = rich_job();
  std::string agent = write_agent_json(job);
  json doc = json::parse(agent);
  EXPECT_EQ(doc["schema"], "hangscan-agent/1");
  // distinct stacks: all_reduce (locals), all_reduce (helpers, no locals), sleep (locals),
  // native, kernel, empty
  EXPECT_EQ(doc["stacks"].size(), 6u);
  EXPECT_EQ(doc["processes"][0]["threads"][0]["frames"], 0);
  EXPECT_EQ(doc["processes"][1]["threads"][0]["frames"], 0);
  auto back = read_job_json(agent);
  ASSERT_TRUE(back.ok()) << back.error().what();
  EXPECT_EQ(write_json(*back, nullptr), write_json(job, nullptr));
}

TEST(AgentFormat, WireSizeGrowsWithDistinctStacksNotRanks) {
  auto doc_for = [](int ranks) {
    JobSnapshot job;
    std::vector<Frame> deep;
    for (int i = 0; i < 60; ++i)
      deep.push_back(py("f" + std::to_string(i), "/site-packages/pkg/module.py", i + 1));
    for (int r = 0; r < ranks; ++r) job.processes.push_back(rank_process(r, 100 + r, deep));
    return std::make_pair(write_agent_json(job).size(), write_json(job, nullptr, -1).size());
  };
  auto [agent8, plain8] = doc_for(8);
  auto [agent64, plain64] = doc_for(64);
  EXPECT_LT(agent8 * 5, plain8);
  // 56 more ranks add only their own metadata (~200 bytes each, no frames) ...
  EXPECT_LT((agent64 - agent8) / 56, 250u);
  // ... while every rank adds its whole stack to the plain document.
  EXPECT_GT((plain64 - plain8) / 56, 9000u);
}

TEST(Merge, JoinsNodeDocuments) {
  JobSnapshot a, b;
  a.processes.push_back(rank_process(0, 10, in_all_reduce(), 'S', "n1"));
  b.processes.push_back(rank_process(1, 10, in_sleep(), 'S', "n2"));
  b.job_id = "77";
  a.expected_world_size = 2;
  b.expected_world_size = 4;
  b.unreachable.push_back({"n3", "srun: error"});
  a.diagnostics.push_back(
      {Diagnostic::Severity::warning, "w", "", "n1", std::nullopt, std::nullopt});
  JobSnapshot m = merge_job_snapshots({a, b});
  ASSERT_EQ(m.processes.size(), 2u);
  EXPECT_EQ(m.processes[0].host, "n1");
  EXPECT_EQ(m.processes[1].host, "n2");
  EXPECT_EQ(m.expected_world_size, 4);
  EXPECT_EQ(m.job_id, "77");
  EXPECT_EQ(m.unreachable.size(), 1u);
  EXPECT_EQ(m.diagnostics.size(), 1u);
}

// A tcp wait on another node: each node's agent document carries it, the merge names the rank.
TEST(Merge, LinksTcpWaitsAcrossNodesThroughTheAgentFormat) {
  JobSnapshot a, b;
  a.processes.push_back(rank_process(0, 10, in_all_reduce(), 'S', "n1"));
  a.processes[0].threads[0].syscall = "recvfrom";
  a.processes[0].threads[0].waits_on = {
      {"", std::nullopt, std::nullopt, "tcp 10.0.0.1:40312 -> 10.0.0.2:29502"}};
  a.processes[0].tcp_connections = {"10.0.0.1:40312 -> 10.0.0.2:29502"};
  b.processes.push_back(rank_process(1, 10, in_sleep(), 'S', "n2"));
  b.processes[0].tcp_connections = {"10.0.0.2:29502 -> 10.0.0.1:40312"};
  auto ra = read_job_json(write_agent_json(a));
  auto rb = read_job_json(write_agent_json(b));
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(rb->processes[0].tcp_connections, b.processes[0].tcp_connections);
  JobSnapshot m = merge_job_snapshots({*ra, *rb});
  ASSERT_EQ(m.processes[0].threads[0].waits_on.size(), 1u);
  EXPECT_EQ(m.processes[0].threads[0].waits_on[0],
            (WaitEdge{"n2", 10, 1, "tcp 10.0.0.1:40312 -> 10.0.0.2:29502"}));
  json doc = json::parse(write_json(m, nullptr));
  EXPECT_EQ(doc["processes"][0]["threads"][0]["waits_on"][0],
            json({{"host", "n2"},
                  {"pid", 10},
                  {"rank", 1},
                  {"via", "tcp 10.0.0.1:40312 -> 10.0.0.2:29502"}}));
}

struct Hostile {
  const char* name;
  std::string text;
  std::string error;  // exact message, or a prefix ending in '*'
};

void expect_error(const Hostile& h, const ReadLimits& limits) {
  auto r = read_job_json(h.text, limits);
  ASSERT_FALSE(r.ok()) << h.name;
  EXPECT_EQ(r.error().code, Errc::bad_data) << h.name;
  if (!h.error.empty() && h.error.back() == '*') {
    EXPECT_EQ(r.error().message.substr(0, h.error.size() - 1),
              h.error.substr(0, h.error.size() - 1))
        << h.name;
  } else {
    EXPECT_EQ(r.error().message, h.error) << h.name;
  }
}

TEST(JsonReader, RejectsHostileDocuments) {
  const std::string head = R"({"schema":"hangscan/1","processes":[)";
  const std::string agent = R"({"schema":"hangscan-agent/1",)";
  std::vector<Hostile> cases = {
      {"empty", "", "malformed JSON: *"},
      {"truncated", head + R"({"pid":1,"threads":[{"tid":1,"frames":[{"kind":"nat)",
       "malformed JSON: *"},
      {"garbage",
       "\x7f"
       "ELF\x02\x01",
       "malformed JSON: *"},
      {"not an object", "[1,2]", "document is array, expected an object"},
      {"no schema", R"({"processes":[]})",
       "schema: unknown schema \"\" (expected hangscan/1 or hangscan-agent/1)"},
      {"no processes", R"({"schema":"hangscan/1"})", "processes: missing"},
      {"processes not array", R"({"schema":"hangscan/1","processes":{}})",
       "processes: expected an array, got object"},
      {"pid string", head + R"({"pid":"1"}]})",
       "processes[0].pid: expected an integer, got string"},
      {"pid negative", head + R"({"pid":-5}]})", "processes[0].pid: -5 is out of range"},
      {"pid huge", head + R"({"pid":99999999999}]})",
       "processes[0].pid: 99999999999 is out of range"},
      {"pid float", head + R"({"pid":1.5}]})", "processes[0].pid: expected an integer, got number"},
      {"tid missing", head + R"({"pid":1,"threads":[{}]}]})",
       "processes[0].threads[0].tid: missing"},
      {"bad kind", head + R"({"pid":1,"threads":[{"tid":1,"frames":[{"kind":"evil"}]}]}]})",
       "processes[0].threads[0].frames[0].kind: unknown frame kind \"evil\""},
      {"bad hex",
       head + R"({"pid":1,"threads":[{"tid":1,"frames":[{"kind":"native","pc":"0xZZ"}]}]}]})",
       "processes[0].threads[0].frames[0].pc: bad hex \"0xZZ\""},
      {"state word", head + R"({"pid":1,"state":"SLEEP"}]})",
       "processes[0].state: expected a one-letter state"},
      {"cpu string", head + R"({"pid":1,"cpu_percent":"x"}]})",
       "processes[0].cpu_percent: expected a number, got string"},
      {"deep", std::string(200, '[') + std::string(200, ']'),
       "JSON document nests deeper than 32 levels"},
      {"deep in string is fine but bad schema",
       R"({"schema":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[","processes":[]})",
       "schema: unknown schema \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\" (expected hangscan/1 or "
       "hangscan-agent/1)"},
      {"stack index",
       agent +
           R"("strings":[],"frames":[],"stacks":[[]],"processes":[{"pid":1,"threads":[{"tid":1,"frames":5}]}]})",
       "processes[0].threads[0].frames: stack 5 does not exist"},
      {"frame index", agent + R"("strings":[],"frames":[],"stacks":[[3]],"processes":[]})",
       "stacks[0]: frame 3 does not exist"},
      {"string index", agent + R"("strings":["a"],"frames":[[2,1]],"stacks":[],"processes":[]})",
       "frames[0][1]: string 1 does not exist"},
      {"frame kind", agent + R"("strings":["a"],"frames":[[9,0]],"stacks":[],"processes":[]})",
       "frames[0][0]: 9 is out of range"},
      {"frame pc",
       agent + R"("strings":["a"],"frames":[[0,0,null,null,0,-1]],"stacks":[],"processes":[]})",
       "frames[0][5]: expected an unsigned integer, got number"},
      {"agent stack inline",
       agent +
           R"("strings":[],"frames":[],"stacks":[],"processes":[{"pid":1,"threads":[{"tid":1,"frames":[]}]}]})",
       "processes[0].threads[0].frames: expected an integer, got array"},
      {"agent no tables", agent + R"("processes":[]})", "strings: missing"},
  };
  for (const Hostile& h : cases) expect_error(h, ReadLimits{});
}

TEST(JsonReader, EnforcesCountAndSizeLimits) {
  ReadLimits small;
  small.max_bytes = 64;
  expect_error({"size", std::string(65, ' '),
                "JSON document of 65 bytes is larger than the limit of 64 bytes"},
               small);
  ReadLimits lim;
  lim.max_processes = 2;
  lim.max_threads = 1;
  lim.max_frames = 2;
  lim.max_string = 16;
  lim.max_total_frames = 5;
  const std::string head = R"({"schema":"hangscan/1","processes":[)";
  expect_error({"processes", head + R"({"pid":1},{"pid":2},{"pid":3}]})",
                "processes: 3 entries, more than the limit of 2"},
               lim);
  expect_error({"threads", head + R"({"pid":1,"threads":[{"tid":1},{"tid":2}]}]})",
                "processes[0].threads: 2 entries, more than the limit of 1"},
               lim);
  expect_error(
      {"frames",
       head +
           R"({"pid":1,"threads":[{"tid":1,"frames":[{"kind":"native"},{"kind":"native"},{"kind":"native"}]}]}]})",
       "processes[0].threads[0].frames: 3 entries, more than the limit of 2"},
      lim);
  expect_error({"string", head + R"({"pid":1,"host":"12345678901234567"}]})",
                "processes[0].host: string of 17 bytes, more than 16"},
               lim);
  // An agent document that expands one stack for many threads hits the total frame bound.
  std::string bomb =
      R"({"schema":"hangscan-agent/1","strings":[],"frames":[[0]],"stacks":[[0,0]],"processes":[)"
      R"({"pid":1,"threads":[{"tid":1,"frames":0,"native_frames":0,"kernel_frames":0}]}]})";
  expect_error(
      {"bomb", bomb, "processes[0].threads[0].kernel_frames: more than 5 frames in the document"},
      lim);
}

}  // namespace
// How a live capture took a thread (the quiet dump's "bpf", or "ptrace") survives both JSON
// forms; a thread without it (cores) has none after reading back.
TEST(JsonReader, ThreadCaptureRoundTripsInBothForms) {
  JobSnapshot job = rich_job();
  job.processes[0].threads[0].capture = "bpf";
  for (const std::string& text : {write_json(job, nullptr), write_agent_json(job)}) {
    auto back = read_job_json(text);
    ASSERT_TRUE(back.ok()) << back.error().what();
    EXPECT_EQ(back->processes[0].threads[0].capture, std::optional<std::string>("bpf"));
    EXPECT_EQ(back->processes[1].threads[0].capture, std::nullopt);
  }
}

}  // namespace hangscan
