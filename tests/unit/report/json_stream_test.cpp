// The streaming reader: what only a reader that sees a document in its written order must get
// right (schema and tables after the processes, repeated members), and stacks shared by the
// documents of one run.
#include <gtest/gtest.h>

#include "report/agent_format.h"
#include "report/json_reader.h"
#include "util/shared_stacks.h"

namespace hangscan {
namespace {

std::string error_of(const std::string& doc) {
  auto r = read_job_json(doc);
  return r.ok() ? std::string("accepted") : r.error().message;
}

TEST(JsonStream, ChecksWhatComesBeforeTheSchemaOnceTheSchemaIsKnown) {
  // A sorted agent document writes "processes" before "schema", "stacks" and "strings".
  EXPECT_EQ(
      error_of(R"({"frames":[[0,0]],"processes":[{"pid":1,"threads":[{"tid":1,"frames":[]}]}],)"
               R"("schema":"hangscan-agent/1","stacks":[[0]],"strings":["f"]})"),
      "processes[0].threads[0].frames: expected an integer, got array");
  EXPECT_EQ(error_of(R"({"processes":[{"pid":1,"threads":[{"tid":1,"frames":0}]}],)"
                     R"("schema":"hangscan/1"})"),
            "processes[0].threads[0].frames: expected an array, got number");
  EXPECT_EQ(
      error_of(R"({"frames":[[0,0]],"processes":[{"pid":1,"threads":[{"tid":1,"frames":3}]}],)"
               R"("schema":"hangscan-agent/1","stacks":[[0]],"strings":["f"]})"),
      "processes[0].threads[0].frames: stack 3 does not exist");
  // A frame no stack uses is checked all the same.
  EXPECT_EQ(error_of(R"({"frames":[[0,0],[0,7]],"processes":[],)"
                     R"("schema":"hangscan-agent/1","stacks":[[0]],"strings":["f"]})"),
            "frames[1][1]: string 7 does not exist");
  EXPECT_EQ(error_of(R"({"frames":7,"processes":[],"schema":"hangscan-agent/1","stacks":[],)"
                     R"("strings":[]})"),
            "frames: expected an array, got number");
  EXPECT_EQ(error_of(R"({"frames":[{"a":1}],"processes":[],"schema":"hangscan-agent/1",)"
                     R"("stacks":[],"strings":[]})"),
            "frames[0]: expected an array, got object");
  EXPECT_EQ(error_of(R"({"frames":[],"processes":[],"schema":"hangscan-agent/1","stacks":[],)"
                     R"("strings":["a",["b"]]})"),
            "strings[1]: expected a string, got array");
  // Plain documents ignore what only the agent format has.
  EXPECT_EQ(error_of(R"({"frames":"junk","processes":[],"schema":"hangscan/1"})"), "accepted");
}

TEST(JsonStream, SyntaxErrorsComeBeforeWhatTheDocumentSaid) {
  EXPECT_EQ(error_of(R"({"processes":[{"pid":-1}],"schema":"hangscan/1")").substr(0, 15),
            "malformed JSON:");
}

TEST(JsonStream, ARepeatedMemberReplacesTheFirst) {
  auto r = read_job_json(R"({"schema":"hangscan/1","processes":[{"pid":1},{"pid":2}],)"
                         R"("job_id":"a","processes":[{"pid":3}],"job_id":"b"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->processes.size(), 1u);
  EXPECT_EQ(r->processes[0].pid, 3);
  EXPECT_EQ(r->job_id, "b");
}

JobSnapshot node(int pid, int line) {
  JobSnapshot job;
  ProcessSnapshot p;
  p.pid = pid;
  ThreadSnapshot t;
  t.tid = pid;
  Frame f;
  f.kind = FrameKind::python;
  f.function = "all_reduce";
  f.file = "/t/c10d.py";
  f.line = line;
  t.frames = {f};
  p.threads.push_back(t);
  job.processes.push_back(p);
  return job;
}

TEST(JsonStream, DocumentsReadWithOneTableShareStacks) {
  SharedStacks shared;
  auto a = read_job_json(write_agent_json(node(1, 10)), {}, &shared);
  auto b = read_job_json(write_agent_json(node(2, 10)), {}, &shared);
  auto c = read_job_json(write_agent_json(node(3, 11)), {}, &shared);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  const JobSnapshot &ja = *a, &jb = *b, &jc = *c;
  EXPECT_EQ(ja.processes[0].threads[0].frames.id(), jb.processes[0].threads[0].frames.id());
  EXPECT_NE(ja.processes[0].threads[0].frames.id(), jc.processes[0].threads[0].frames.id());
  EXPECT_EQ(jc.processes[0].threads[0].frames[0].line, 11);
  EXPECT_EQ(shared.frames(), 2u);
  EXPECT_EQ(shared.stacks(), 2u);
  // Without a shared table, each document has its own.
  auto d = read_job_json(write_agent_json(node(4, 10)));
  ASSERT_TRUE(d.ok());
  const JobSnapshot& jd = *d;
  EXPECT_NE(jd.processes[0].threads[0].frames.id(), ja.processes[0].threads[0].frames.id());
  EXPECT_EQ(jd.processes[0].threads[0].frames.frames(), ja.processes[0].threads[0].frames.frames());
}

}  // namespace
}  // namespace hangscan
