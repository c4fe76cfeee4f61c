// The merge of node watch reports (watch --slurm-job): node tags, one time axis, bad documents.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "util/version.h"
#include "watch/cluster_watch.h"
#include "watch/node_watch_reader.h"

namespace hangscan {
namespace {

using json = nlohmann::json;

// A stamped node report as `watch --node-local` sends it: ranks `ranks`, one kill at `kill_t`.
std::string node_report(const std::string& node, double start_unix, std::vector<int> ranks,
                        double kill_t) {
  json doc{{"recorder", "ebpf"},
           {"window_s", 3.0},
           {"sample_hz", 49},
           {"events", 2},
           {"lost", 0},
           {"processes", json::array()},
           {"timeline", json::array()},
           {"diagnostics", json::array()}};
  for (int r : ranks)
    doc["processes"].push_back(
        {{"pid", 1000 + r}, {"rank", r}, {"role", "rank"}, {"comm", "python3"}});
  if (kill_t >= 0) {
    doc["timeline"].push_back(
        {{"t_s", kill_t}, {"kind", "signal"}, {"pid", 1000 + ranks.front()}, {"text", "sent"}});
  }
  doc["node"] = node;
  doc["window_start_unix_s"] = start_unix;
  doc["clock_read_error_s"] = 2e-6;
  stamp_node_watch_version(doc);
  return doc.dump();
}

TEST(ClusterWatch, TagsNodesSortsRanksAndPutsEventsOnOneAxis) {
  std::vector<NodeWatchDocument> docs{{"n2", node_report("n2", 1000.5, {3, 2}, 0.2)},
                                      {"n1", node_report("n1", 1000.0, {1, 0}, 0.6)}};
  json m = merge_node_watches("7", docs, {});
  ASSERT_EQ(m["processes"].size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(m["processes"][r]["rank"], r);
    EXPECT_EQ(m["processes"][r]["node"], r < 2 ? "n1" : "n2");
  }
  EXPECT_DOUBLE_EQ(m["window_start_unix_s"].get<double>(), 1000.0);
  ASSERT_EQ(m["timeline"].size(), 2u);
  // n1's event at +0.6 comes before n2's at +0.2 on n2's axis (+0.7 on the merged one).
  EXPECT_EQ(m["timeline"][0]["node"], "n1");
  EXPECT_NEAR(m["timeline"][0]["t_s"].get<double>(), 0.6, 1e-9);
  EXPECT_EQ(m["timeline"][1]["node"], "n2");
  EXPECT_NEAR(m["timeline"][1]["t_s"].get<double>(), 0.7, 1e-9);
  EXPECT_NEAR(m["timeline"][1]["node_t_s"].get<double>(), 0.2, 1e-9);
  EXPECT_NEAR(m["timeline"][1]["time_unix_s"].get<double>(), 1000.7, 1e-9);
  EXPECT_DOUBLE_EQ(m["clock"]["read_error_s"].get<double>(), 2e-6);
  EXPECT_TRUE(m["unreachable"].empty());
  std::string text = cluster_watch_text(m);
  EXPECT_NE(text.find("rank 3 (pid 1003, python3) on n2"), std::string::npos) << text;
  EXPECT_NE(text.find("+0.700 s  n2: sent"), std::string::npos) << text;
}

// Each node's processes carry their behaviour keys: the merge groups the ranks of all nodes
// with dump's verdict, the groups naming their nodes; a report without keys leaves it ungrouped.
TEST(ClusterWatch, RanksOfEveryNodeAreGroupedByBehaviour) {
  auto keyed = [](const std::string& node, double start, std::vector<int> ranks, int odd) {
    json doc = json::parse(node_report(node, start, ranks, -1));
    for (auto& p : doc["processes"]) {
      bool busy = p["rank"] == odd;
      p["behaviour"] = busy ? json{{"kind", "active"},
                                   {"cpu_share", 0.99},
                                   {"wait_count", 0},
                                   {"key", json::array({"(active in the window)"})}}
                            : json{{"kind", "stuck"},
                                   {"syscall", "read"},
                                   {"wait_s", 9.0},
                                   {"key", json::array({"all_reduce", "(stuck in read())"})}};
    }
    return doc.dump();
  };
  std::vector<NodeWatchDocument> docs{{"n1", keyed("n1", 1000.0, {0, 1}, -1)},
                                      {"n2", keyed("n2", 1000.0, {2, 3}, 3)}};
  json m = merge_node_watches("7", docs, {});
  ASSERT_EQ(m["groups"].size(), 2u) << m["groups"].dump();
  EXPECT_EQ(m["groups"][0]["ranks"], json::array({3}));
  EXPECT_EQ(m["groups"][0]["nodes"], json::array({"n2"}));
  EXPECT_EQ(m["groups"][1]["ranks"], json::array({0, 1, 2}));
  EXPECT_EQ(m["groups"][1]["nodes"], json::array({"n1", "n2"}));
  EXPECT_EQ(m["suspects"], json::array({3}));
  EXPECT_EQ(m["groups"][0]["behaviour"]["kind"], "active");
  EXPECT_EQ(m["groups"][1]["what"], "stuck in read() (9.0 s)");
  std::string text = cluster_watch_text(m);
  EXPECT_NE(text.find("  * rank 3 on n2: active (on CPU 99%, 0 waits ended)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  ranks 0-2 on 2 nodes: stuck in read() (9.0 s)"), std::string::npos)
      << text;

  docs[0].text = node_report("n1", 1000.0, {0, 1}, -1);  // no behaviour keys
  json unkeyed = merge_node_watches("7", docs, {});
  EXPECT_TRUE(unkeyed["groups"].empty());
  EXPECT_TRUE(unkeyed["suspects"].empty());
}

TEST(ClusterWatch, ABadOrOversizedDocumentMakesItsNodeUnreachable) {
  std::vector<NodeWatchDocument> docs{{"n1", node_report("n1", 5.0, {0}, -1)},
                                      {"n2", "{\"processes\": ["},
                                      {"n3", std::string(2000, ' ')}};
  ReadLimits small;
  small.max_bytes = 1000;
  json m = merge_node_watches("7", docs, {{"n4", "srun could not start the agent there"}}, small);
  EXPECT_EQ(m["processes"].size(), 1u);
  ASSERT_EQ(m["unreachable"].size(), 3u);
  EXPECT_EQ(m["unreachable"][0]["node"], "n4");
  EXPECT_EQ(m["unreachable"][1]["node"], "n2");
  EXPECT_EQ(m["unreachable"][2]["node"], "n3");
  EXPECT_NE(m["unreachable"][2]["reason"].get<std::string>().find("over the limit of 1000"),
            std::string::npos);
}

// A node's document is read as an agent document is: another version's is not used, and a
// hostile one (a wrong type, a limit exceeded, nested too deep) is that node's reason, named by
// its JSON path; the other nodes are still merged, and what each node's watchdog said is kept
// from the one read (the front end's watchdog judges from the merged node entries).
TEST(ClusterWatch, NodeDocumentsAreVersionCheckedAndBounded) {
  auto edited = [](const std::string& node, const std::function<void(json&)>& edit) {
    json doc = json::parse(node_report(node, 1000.0, {std::stoi(node.substr(1))}, -1));
    edit(doc);
    return doc.dump();
  };
  std::string deep = "[]";
  for (int i = 0; i < 40; ++i) deep = "[" + deep + "]";
  json nested = json::parse(node_report("n5", 1000.0, {5}, -1));
  std::string nested_text = nested.dump();
  nested_text.insert(nested_text.size() - 1, ",\"zz\":" + deep);
  std::vector<NodeWatchDocument> docs{
      {"n1",
       edited("n1",
              [](json& d) {
                d["stall"] = {{"reason", "no progress for 3 s"}, {"last_progress_unix_s", 999.5}};
                d["processes"][0]["exit"] = nullptr;  // alive: the schema's null stays
                d["processes"][0]["top_stacks"] = {
                    {{"share", 1.0}, {"frames", {{{"function", nullptr}}}}}};
              })},
      {"n2", edited("n2", [](json& d) { d["agent_version"] = "0.0.1-other"; })},
      {"n3", edited("n3", [](json& d) { d["processes"][0]["pid"] = "1003"; })},
      {"n4", edited("n4", [](json& d) { d["processes"][0]["comm"] = std::string(70000, 'x'); })},
      {"n5", nested_text},
      {"n6", edited("n6",
                    [](json& d) {
                      d["stall"] = {{"reason", 7}};
                    })},
      {"n7", edited("n7", [](json& d) { d.erase("schema"); })}};
  json m = merge_node_watches("7", docs, {});
  ASSERT_EQ(m["processes"].size(), 1u);
  EXPECT_EQ(m["processes"][0]["node"], "n1");
  EXPECT_TRUE(m["processes"][0].contains("exit") && m["processes"][0]["exit"].is_null());
  ASSERT_EQ(m["nodes"].size(), 1u);
  EXPECT_EQ(m["nodes"][0]["stall"],
            json({{"reason", "no progress for 3 s"}, {"last_progress_unix_s", 999.5}}));
  EXPECT_EQ(m["nodes"][0]["ranks_ended"], false);
  std::vector<std::pair<std::string, std::string>> reasons;
  for (const auto& u : m["unreachable"]) reasons.emplace_back(u["node"], u["reason"]);
  const std::string ours =
      fmt::format("hangscan {} (commit {})", hangscan_version(), hangscan_commit());
  std::vector<std::pair<std::string, std::string>> want{
      {"n2", fmt::format("the agent there is hangscan 0.0.1-other (commit {}), this front end is "
                         "{}: answer not used (install the same hangscan on every node, or pass "
                         "--agent-path to a copy of this version; 'hangscan doctor --agent-path "
                         "PATH' on the node checks it)",
                         hangscan_commit(), ours)},
      {"n3", "bad watch report: processes[0].pid: expected an integer, got string"},
      {"n4", "bad watch report: processes[0].comm: string of 70000 bytes, more than 65536"},
      {"n5", "bad watch report: nested deeper than 32"},
      {"n6", "bad watch report: stall.reason: expected a string, got number"},
      {"n7", "bad watch report: not a hangscan-watch-node/1 document"}};
  EXPECT_EQ(reasons, want);
  std::string text = cluster_watch_text(m);  // a null frame name reads as "??"
  EXPECT_NE(text.find("  top on-CPU stack 100%: ??\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  n3: no report: bad watch report: processes[0].pid: expected an integer"),
            std::string::npos)
      << text;
}

TEST(ClusterWatch, BootTimeIsReadToWithinItsBracket) {
  NodeClock c = read_node_clock();
  timespec rt{}, mono{};
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  double boot = (rt.tv_sec + rt.tv_nsec / 1e9) - (mono.tv_sec + mono.tv_nsec / 1e9);
  EXPECT_LT(c.read_error_s, 0.01);
  EXPECT_NEAR(c.boot_unix_s, boot, 0.01);  // the wall clock is not stepped in between
}

}  // namespace
}  // namespace hangscan

namespace hangscan {
namespace {

// A node's answer is untrusted: its node, command and event words are shown escaped
// (util/escape.h), so none drives the terminal or adds a line of its own.
TEST(ClusterWatch, NamesFromNodesAreEscaped) {
  nlohmann::json doc = nlohmann::json::parse(node_report("n1", 1000.0, {0}, 0.5));
  doc["processes"][0]["comm"] = "py\x1b]0;T\x07";
  doc["timeline"][0]["text"] = "sent\nSUSPECT rank 9";
  std::vector<NodeWatchDocument> docs{{"n1", doc.dump()}};
  std::string text = cluster_watch_text(merge_node_watches("7", docs, {}));
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_NE(text.find("\nrank 0 (pid 1000, py\\x1b]0;T\\x07) on n1: on CPU"), std::string::npos)
      << text;
  EXPECT_NE(text.find(": sent\\nSUSPECT rank 9\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace hangscan
