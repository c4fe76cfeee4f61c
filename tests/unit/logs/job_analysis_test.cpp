// A job's analysis as a library call (logs/job_analysis.h): a bad grouping option is an Error
// with its hint, a log that could not be read is a LogProblem, and neither is printed.
#include "logs/job_analysis.h"

#include <gtest/gtest.h>

#include <string>

#include "temp_dir.h"

namespace hangscan {
namespace {

JobSnapshot one_rank(int pid) {
  ProcessSnapshot p;
  p.pid = pid;
  p.rank = 0;
  p.role = "rank";
  p.captured_at = 1795792900.0;
  ThreadSnapshot t;
  t.tid = pid;
  t.frames = FrameStack({Frame{
      .kind = FrameKind::python, .function = "load_batch", .file = "/job/data.py", .line = 88}});
  p.threads.push_back(std::move(t));
  JobSnapshot job;
  job.processes.push_back(std::move(p));
  return job;
}

GroupOptions matching(const std::string& regex) {
  GroupOptions g;
  g.threads = GroupOptions::Threads::matching;
  g.thread_regex = regex;
  return g;
}

TEST(JobAnalysis, ABadThreadRegexIsAnErrorWithItsHintNotAPrint) {
  testing::internal::CaptureStderr();
  auto a = analyze_job(one_rank(41), matching("("));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, Errc::usage);
  EXPECT_EQ(a.error().message,
            "bad thread regex \"(\": Mismatched '(' and ')' in regular expression");
  EXPECT_EQ(a.error().hint,
            "--thread-regex is an ECMAScript regular expression over thread names, e.g. "
            "'pt_main|gloo'");
}

TEST(JobAnalysis, MatchingWithoutARegexAndAnOverlongOneAreRefused) {
  auto none = check_group_options(matching(""));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().hint,
            "add --thread-regex REGEX, e.g. --threads matching --thread-regex 'pt_main|gloo'");
  auto long_one = check_group_options(matching(std::string(1025, 'a')));
  ASSERT_FALSE(long_one.ok());
  EXPECT_EQ(long_one.error().message,
            "--thread-regex is 1025 characters long; at most 1024 are "
            "accepted");
  EXPECT_EQ(long_one.error().hint,
            "thread names have 15 characters at most: a short pattern matches them");
}

TEST(JobAnalysis, GoodOptionsGroupTheJob) {
  auto a = analyze_job(one_rank(41), matching("^python"));
  ASSERT_TRUE(a.ok()) << a.error().what();
  EXPECT_EQ(a->options.thread_regex, "^python");
  EXPECT_EQ(a->grouped, (std::vector<std::size_t>{0}));
  EXPECT_EQ(a->groups.size(), 1u);
}

TEST(JobAnalysis, UnreadableLogsAreProblemsNotPrints) {
  TempDir dir;
  std::string good = dir.file("train-5-0.out", "2026-11-27 15:21:00,500 INFO loading batch 17\n");
  JobSnapshot job = one_rank(41);
  auto a = analyze_job(job, GroupOptions{});
  ASSERT_TRUE(a.ok());
  JobLogs logs;
  logs.paths = {good, dir.path() + "/missing.out", dir.path() + "/none-*.log"};
  logs.texts.push_back(LogText{.name = "kubectl logs pod-1", .error = "pod not found"});
  testing::internal::CaptureStderr();
  auto problems = join_job_logs(job, *a, logs);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(problems,
            (std::vector<LogProblem>{{dir.path() + "/missing.out", "No such file or directory"},
                                     {dir.path() + "/none-*.log", "no file matches this pattern"},
                                     {"kubectl logs pod-1", "pod not found"}}));
  // The readable one is still joined: rank 0's last line beside its frame.
  ASSERT_EQ(a->last_logs.size(), 1u);
  EXPECT_EQ(a->last_logs[0].text, "2026-11-27 15:21:00,500 INFO loading batch 17");
  EXPECT_EQ(a->last_logs[0].where, "load_batch (data.py:88)");
}

TEST(JobAnalysis, NoLogsNoProblemsAndNoLastLines) {
  JobSnapshot job = one_rank(41);
  auto a = analyze_job(job, GroupOptions{});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(join_job_logs(job, *a, JobLogs{}).empty());
  EXPECT_TRUE(a->last_logs.empty());
}

}  // namespace
}  // namespace hangscan
