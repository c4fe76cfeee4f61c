// The writer registry: every format the CLI offers, with the file name --output DIR gives it.
#include "report/report_writers.h"

#include <gtest/gtest.h>

namespace hangscan {
namespace {

TEST(ReportWriters, NamesInOrder) {
  EXPECT_EQ(report_format_names(),
            (std::vector<std::string>{"text", "json", "dot", "svg", "folded", "html"}));
}

TEST(ReportWriters, ExtensionsAndFilters) {
  EXPECT_EQ(find_report_writer("text")->extension, "txt");
  EXPECT_EQ(find_report_writer("json")->extension, "json");
  EXPECT_EQ(find_report_writer("folded")->extension, "folded");
  auto svg = find_report_writer("svg");
  ASSERT_TRUE(svg);
  EXPECT_EQ(svg->filter, (std::vector<std::string>{"dot", "-Tsvg"}));
  EXPECT_TRUE(find_report_writer("dot")->filter.empty());
  EXPECT_EQ(find_report_writer("html")->extension, "html");
  EXPECT_FALSE(find_report_writer("sarif"));
}

TEST(ReportWriters, RenderTheSameJob) {
  JobSnapshot job;
  ProcessSnapshot p;
  p.pid = 42;
  ThreadSnapshot t;
  t.tid = 42;
  Frame f;
  f.function = "wait_here";
  t.frames.push_back(f);
  p.threads.push_back(t);
  job.processes.push_back(p);
  Analysis a = analyze(job, GroupOptions{});
  std::string json_text = find_report_writer("json")->render(job, a, RenderOptions{});
  EXPECT_NE(json_text.find("\"wait_here\""), std::string::npos) << json_text;
  std::string dot = find_report_writer("dot")->render(job, a, RenderOptions{});
  EXPECT_EQ(dot, find_report_writer("svg")->render(job, a, RenderOptions{}));  // svg pipes the DOT
  EXPECT_EQ(find_report_writer("folded")->render(job, a, RenderOptions{}), "wait_here 1\n");
}

}  // namespace
}  // namespace hangscan
