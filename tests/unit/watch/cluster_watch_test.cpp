// The merge of node watch reports (watch --slurm-job): node tags, one time axis, bad documents.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "watch/cluster_watch.h"

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
      p["behaviour"] = {
          {"what", busy ? "active (on CPU 99%, 0 waits ended)" : "stuck in read() (9.0 s)"},
          {"key", busy ? json::array({"(active in the window)"})
                       : json::array({"all_reduce", "(stuck in read())"})}};
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
  json m = merge_node_watches("7", docs, {{"n4", "srun could not start the agent there"}}, 1000);
  EXPECT_EQ(m["processes"].size(), 1u);
  ASSERT_EQ(m["unreachable"].size(), 3u);
  EXPECT_EQ(m["unreachable"][0]["node"], "n4");
  EXPECT_EQ(m["unreachable"][1]["node"], "n2");
  EXPECT_EQ(m["unreachable"][2]["node"], "n3");
  EXPECT_NE(m["unreachable"][2]["reason"].get<std::string>().find("over the limit of 1000"),
            std::string::npos);
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
