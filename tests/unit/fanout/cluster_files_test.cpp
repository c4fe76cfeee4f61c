// cluster_output_files(): the files of --output DIR after a cluster capture, without a CLI: one
// text file per node (answered or not), the merged report as text and HTML, and report.EXT of
// the chosen format unless it is piped through another program.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fanout/cluster_files.h"

namespace hangscan {
namespace {

std::vector<OutputFile> files_for(const std::string& format) {
  FanoutResult result;
  result.requested = {"n1", "n2"};
  JobSnapshot node;
  ProcessSnapshot p;
  p.pid = 4242;
  p.host = "n1";
  p.rank = 0;
  node.processes.push_back(p);
  result.nodes.push_back({"n1", node});
  result.unreachable.push_back({"n2", "no answer within 30 s"});
  JobSnapshot merged = result.merged();
  Analysis analysis = analyze(merged, GroupOptions{});
  std::vector<OutputFile> out;
  cluster_output_files(result, merged, analysis, GroupOptions{}, RenderOptions{},
                       *find_report_writer(format), RenderOptions{},
                       [&](const OutputFile& f) { out.push_back(f); });
  return out;
}

std::vector<std::string> names(const std::vector<OutputFile>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(f.name);
  return out;
}

TEST(ClusterFiles, EveryNodeTheMergedReportAndTheChosenFormat) {
  auto files = files_for("json");
  EXPECT_EQ(names(files), (std::vector<std::string>{"n1.txt", "n2.txt", "report.txt", "report.html",
                                                    "report.json"}));
  EXPECT_NE(files[0].text.find("rank 0  pid 4242  host n1"), std::string::npos) << files[0].text;
  EXPECT_EQ(files[0].text.find("Unreachable nodes:"), std::string::npos) << files[0].text;
  EXPECT_EQ(files[1].text, "node n2 unreachable: no answer within 30 s\n");
  EXPECT_NE(files[2].text.find("Unreachable nodes:\n  n2: no answer within 30 s"),
            std::string::npos)
      << files[2].text;
  EXPECT_TRUE(files[3].text.starts_with("<!doctype html>")) << files[3].text.substr(0, 80);
  EXPECT_TRUE(files[4].text.starts_with("{")) << files[4].text.substr(0, 80);
  for (const auto& f : files) EXPECT_TRUE(f.text.ends_with("\n")) << f.name;
}

TEST(ClusterFiles, NoSecondTextNorAPipedFormat) {
  const std::vector<std::string> base{"n1.txt", "n2.txt", "report.txt", "report.html"};
  EXPECT_EQ(names(files_for("text")), base);
  EXPECT_EQ(names(files_for("html")), base);
  EXPECT_EQ(names(files_for("svg")), base);  // piped through Graphviz: stdout only
  auto folded = base;
  folded.push_back("report.folded");
  EXPECT_EQ(names(files_for("folded")), folded);
}

}  // namespace
}  // namespace hangscan
