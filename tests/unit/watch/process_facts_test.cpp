// A watched process's exit and capture notes as data: the words made from them (each kind), the
// JSON that carries both, and a node's document whose data is checked when read back.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <csignal>
#include <functional>
#include <string>
#include <vector>

#include "watch/cluster_watch.h"
#include "watch/node_watch_reader.h"
#include "watch/process_facts.h"
#include "watch/watch_format.h"
#include "watch/watch_groups.h"
#include "watch/watch_words.h"

namespace hangscan {
namespace {

using json = nlohmann::json;

TEST(ProcessFacts, ExitCodesAsDataAndInWords) {
  ProcessExit e = process_exit_of(3 << 8);
  EXPECT_EQ(e.kind, ExitKind::exited);
  EXPECT_EQ(e.status, 3);
  EXPECT_EQ(exit_words(e), "exited with status 3");
  EXPECT_EQ(exit_words(process_exit_of(0)), "exited with status 0");
  e = process_exit_of(SIGKILL);
  EXPECT_EQ(e.kind, ExitKind::killed);
  EXPECT_EQ(e.signal, SIGKILL);
  EXPECT_FALSE(e.core_dumped);
  EXPECT_EQ(exit_words(e), "killed by SIGKILL");
  e = process_exit_of(0x80 | SIGSEGV);
  EXPECT_TRUE(e.core_dumped);
  EXPECT_EQ(exit_words(e), "killed by SIGSEGV (core dumped)");
  // A signal glibc has no abbreviation for (a real-time one) is named by its number.
  EXPECT_EQ(exit_words(process_exit_of(SIGRTMIN + 2)),
            "killed by signal " + std::to_string(SIGRTMIN + 2));
  // The ptrace fallback sees a process vanish, not its status.
  e = process_exit_of(-1);
  EXPECT_EQ(e.kind, ExitKind::unknown);
  EXPECT_EQ(exit_words(e), "ended (its exit status is not known without eBPF)");
}

TEST(ProcessFacts, NotesInWordsForEachKind) {
  EXPECT_EQ(note_words({.kind = WatchNoteKind::python_not_watched,
                        .detail = "pid 7: Python frames not copied: map full"}),
            "pid 7: Python frames not copied: map full");
  EXPECT_EQ(note_words({.kind = WatchNoteKind::no_python_frames, .detail = "libpython not mapped"}),
            "no Python frames in samples: libpython not mapped");
  EXPECT_EQ(note_words({.kind = WatchNoteKind::samples_before_exec, .count = 3, .t_s = 1.24}),
            "3 samples from before its exec at 1.2 s not resolved: the program they ran is gone");
  EXPECT_EQ(note_words({.kind = WatchNoteKind::stacks_not_resolved,
                        .count = 2,
                        .pid = 7,
                        .detail = "no such process"}),
            "pid 7: 2 sampled stacks not resolved: no such process");
}

TEST(ProcessFacts, DataBesideTheWordsInTheJson) {
  EXPECT_EQ(exit_to_json(process_exit_of(3 << 8)), json({{"kind", "exited"}, {"status", 3}}));
  EXPECT_EQ(
      exit_to_json(process_exit_of(0x80 | SIGSEGV)),
      json(
          {{"kind", "killed"}, {"signal", SIGSEGV}, {"core_dumped", true}, {"oom_victim", false}}));
  EXPECT_EQ(exit_to_json(process_exit_of(-1)), json({{"kind", "unknown"}}));
  ProcessExit back = *exit_from_json(exit_to_json(process_exit_of(0x80 | SIGABRT)));
  EXPECT_EQ(back.kind, ExitKind::killed);
  EXPECT_EQ(back.signal, SIGABRT);
  EXPECT_TRUE(back.core_dumped);
  EXPECT_FALSE(back.oom_victim);
  // The OOM killer's victim: the data says so, the words are a SIGKILL's.
  ProcessExit oom = process_exit_of(SIGKILL);
  oom.oom_victim = true;
  EXPECT_EQ(exit_words(oom), "killed by SIGKILL");
  EXPECT_TRUE(exit_from_json(exit_to_json(oom))->oom_victim);
  EXPECT_FALSE(exit_from_json(json({{"kind", "vanished"}})));
  EXPECT_FALSE(exit_from_json(json({{"kind", 3}})));

  ProcessWatch p;
  p.pid = 10;
  p.comm = "python3";
  p.exit = process_exit_of(SIGKILL);
  p.notes = {{.kind = WatchNoteKind::samples_before_exec, .count = 4, .t_s = 0.5},
             {.kind = WatchNoteKind::no_python_frames, .detail = "not a Python"}};
  WatchReport r;
  r.recorder = "ebpf";
  r.processes.push_back(p);
  json pj = watch_json(r)["processes"][0];
  EXPECT_EQ(pj["exit"], "killed by SIGKILL");
  EXPECT_EQ(pj["exit_data"], json({{"kind", "killed"},
                                   {"signal", SIGKILL},
                                   {"core_dumped", false},
                                   {"oom_victim", false}}));
  EXPECT_EQ(pj["notes"],
            json({"4 samples from before its exec at 0.5 s not resolved: the program they ran is "
                  "gone",
                  "no Python frames in samples: not a Python"}));
  EXPECT_EQ(pj["note_data"], json::parse(R"([{"kind": "samples_before_exec", "count": 4,
      "t_s": 0.5}, {"kind": "no_python_frames", "detail": "not a Python"}])"));
  std::string text = watch_text(r);
  EXPECT_NE(text.find("pid 10 (python3): on CPU 0% (0 samples), killed by SIGKILL\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  note: no Python frames in samples: not a Python\n"), std::string::npos)
      << text;
}

// An ended behaviour keeps its exit as data; read back from a node's JSON it says the same.
TEST(ProcessFacts, AnEndedBehaviourReadsBackItsExit) {
  ProcessWatch p;
  p.pid = 10;
  p.rank = 0;
  p.exit = process_exit_of(0x80 | SIGSEGV);
  Behaviour b = behaviour_of(p, 10);
  EXPECT_EQ(b.key, std::vector<std::string>{"(killed by SIGSEGV (core dumped))"});
  json j = behaviour_to_json(b);
  EXPECT_EQ(j["exit"], "killed by SIGSEGV (core dumped)");
  auto back = behaviour_from_json(j);
  ASSERT_TRUE(back);
  EXPECT_EQ(behaviour_words(*back), "killed by SIGSEGV (core dumped)");
  j.erase("exit_data");  // its words alone are not data: not grouped
  EXPECT_FALSE(behaviour_from_json(j));
}

std::string node_doc(const std::string& node, const std::function<void(json&)>& edit) {
  json p{{"pid", 1000},
         {"rank", 0},
         {"role", "rank"},
         {"comm", "python3"},
         {"exit", "killed by SIGKILL"},
         {"exit_data", {{"kind", "killed"}, {"signal", 9}, {"core_dumped", false}}},
         {"notes", {"pid 1000: 2 sampled stacks not resolved: gone"}},
         {"note_data",
          {{{"kind", "stacks_not_resolved"}, {"pid", 1000}, {"count", 2}, {"detail", "gone"}}}}};
  json doc{{"recorder", "ebpf"},          {"window_s", 3.0}, {"processes", {p}},
           {"timeline", json::array()},   {"node", node},    {"window_start_unix_s", 1000.0},
           {"diagnostics", json::array()}};
  edit(doc);
  stamp_node_watch_version(doc);
  return doc.dump();
}

// The new fields are checked as the reader checks the others: a known kind, figures of the
// right type and range; a bad one is that node's reason, named by its path.
TEST(ProcessFacts, NodeDocumentsCheckTheExitAndNotesData) {
  auto good = read_node_watch(node_doc("n1", [](json&) {}));
  ASSERT_TRUE(good) << good.error().what();
  EXPECT_TRUE(good->ranks_ended);
  // Without the new fields (the strings alone) the document is read as before.
  auto plain = read_node_watch(node_doc("n1", [](json& d) {
    d["processes"][0].erase("exit_data");
    d["processes"][0].erase("note_data");
  }));
  EXPECT_TRUE(plain) << plain.error().what();

  auto reason = [](const std::function<void(json&)>& edit) {
    auto r = read_node_watch(node_doc("n2", edit));
    return r ? std::string("read") : r.error().what();
  };
  auto p = [](json& d) -> json& { return d["processes"][0]; };
  EXPECT_EQ(reason([&](json& d) { p(d)["exit_data"]["kind"] = "vanished"; }),
            "bad watch report: processes[0].exit_data.kind: not a known exit kind");
  EXPECT_EQ(reason([&](json& d) { p(d)["exit_data"]["signal"] = 65; }),
            "bad watch report: processes[0].exit_data.signal: 65 is out of range");
  EXPECT_NE(reason([&](json& d) {
              p(d)["exit_data"]["oom_victim"] = 1;
            }).find("processes[0].exit_data.oom_victim"),
            std::string::npos);
  EXPECT_NE(reason([&](json& d) {
              p(d)["exit_data"]["core_dumped"] = "yes";
            }).find("processes[0].exit_data.core_dumped"),
            std::string::npos);
  EXPECT_EQ(reason([&](json& d) { p(d)["exit_data"] = 9; }),
            "bad watch report: processes[0].exit_data: expected an object, got number");
  EXPECT_EQ(reason([&](json& d) { p(d)["exit"] = nullptr; }),
            "bad watch report: processes[0].exit_data: an exit's data without its exit");
  EXPECT_EQ(reason([&](json& d) { p(d)["note_data"][0]["kind"] = "other"; }),
            "bad watch report: processes[0].note_data[0].kind: not a known note kind");
  EXPECT_NE(reason([&](json& d) {
              p(d)["note_data"][0]["count"] = -1;
            }).find("processes[0].note_data[0].count"),
            std::string::npos);
  EXPECT_NE(reason([&](json& d) {
              p(d)["note_data"][0]["pid"] = "1000";
            }).find("processes[0].note_data[0].pid"),
            std::string::npos);
  EXPECT_NE(reason([&](json& d) { p(d)["note_data"] = {7}; }).find("processes[0].note_data[0]"),
            std::string::npos);
  EXPECT_EQ(reason([&](json& d) {
              p(d)["behaviour"] = {{"kind", "ended"},
                                   {"key", {"(killed by SIGKILL)"}},
                                   {"exit_data", {{"kind", "killed"}, {"status", 300}}}};
            }),
            "bad watch report: processes[0].behaviour.exit_data.status: 300 is out of range");

  // In the merge, such a node is unreachable with that reason; the good one is merged.
  std::vector<NodeWatchDocument> docs{
      {"n1", node_doc("n1", [](json&) {})},
      {"n2", node_doc("n2", [&](json& d) { p(d)["exit_data"]["kind"] = "vanished"; })}};
  json m = merge_node_watches("7", docs, {});
  ASSERT_EQ(m["processes"].size(), 1u);
  EXPECT_EQ(m["processes"][0]["exit_data"]["signal"], 9);
  ASSERT_EQ(m["unreachable"].size(), 1u);
  EXPECT_EQ(m["unreachable"][0]["node"], "n2");
}

}  // namespace
}  // namespace hangscan
