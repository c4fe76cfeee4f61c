// Reading node documents as they arrive: the same results as reading them afterwards, damage
// still reported per node, and the progress line.
#include "fanout/early_reader.h"

#include <gtest/gtest.h>

#include "fanout/collector.h"
#include "report/agent_format.h"

namespace hangscan {
namespace {

JobSnapshot node_job(int first_pid) {
  JobSnapshot job;
  for (int i = 0; i < 3; ++i) {
    ProcessSnapshot p;
    p.pid = first_pid + i;
    p.rank = first_pid + i;
    p.role = "rank";
    ThreadSnapshot t;
    t.tid = p.pid;
    t.is_main = true;
    Frame f;
    f.kind = FrameKind::python;
    f.function = "all_reduce";
    f.file = "/t/c10d.py";
    f.line = 1541;
    t.frames = {f};
    p.threads.push_back(t);
    job.processes.push_back(p);
  }
  return job;
}

TEST(EarlyReader, ReadsWhatWasSubmittedOnce) {
  EarlyReader early({}, 2);
  std::string a = write_agent_json(node_job(0));
  std::string b = write_agent_json(node_job(3));
  early.submit(a);
  early.submit(b);
  early.submit("{not json");
  auto ra = early.take(a);
  ASSERT_TRUE(ra && ra->ok());
  const JobSnapshot& job = **ra;  // const: writing through a FrameStack would unshare it
  EXPECT_EQ(job.processes.size(), 3u);
  EXPECT_EQ(job.processes[0].threads[0].frames[0].line, 1541);
  // Threads of one document that share a stack share its frames.
  EXPECT_EQ(job.processes[0].threads[0].frames.id(), job.processes[2].threads[0].frames.id());
  EXPECT_FALSE(early.take(a));  // taken
  auto bad = early.take("{not json");
  ASSERT_TRUE(bad);
  EXPECT_FALSE(bad->ok());
  EXPECT_FALSE(early.take("never submitted"));
}

TEST(EarlyReader, AnswersReadEarlyEqualAnswersReadLate) {
  std::vector<NodeDocument> docs = {{"n1", "n1", write_agent_json(node_job(0))},
                                    {"n2", "n2", write_agent_json(node_job(3))},
                                    {"n3", "n3", "{\"schema\": 5}"}};
  AgentAnswers answers;
  answers.requested = {"n1", "n2", "n3"};
  answers.documents = docs;
  FanoutResult late = read_job_answers(answers);
  EarlyReader early({}, 2);
  for (const NodeDocument& d : docs) early.submit(d.text);
  FanoutResult soon = read_job_answers(answers, {}, &early);
  ASSERT_EQ(soon.nodes.size(), 2u);
  ASSERT_EQ(late.nodes.size(), 2u);
  EXPECT_EQ(soon.merged().processes.size(), 6u);
  EXPECT_EQ(soon.merged().processes[4].host, "n2");
  ASSERT_EQ(soon.unreachable.size(), 1u);
  EXPECT_EQ(soon.unreachable[0].host, "n3");
  EXPECT_EQ(soon.unreachable[0].reason, late.unreachable[0].reason);
}

TEST(ProgressLine, CountsWithThousandsSeparators) {
  EXPECT_EQ(progress_line({7912, 3, 10000}), "7,912/10,000 nodes answered, 3 unreachable");
  EXPECT_EQ(progress_line({0, 0, 3}), "0/3 nodes answered");
  EXPECT_EQ(progress_line({1234567, 1000, 1235567}),
            "1,234,567/1,235,567 nodes answered, 1,000 unreachable");
}

}  // namespace
}  // namespace hangscan
