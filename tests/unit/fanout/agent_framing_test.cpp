// Framing and splitting of merged agent output: exact reassembly through srun's 1,024-byte
// relabeling, interleaving, truncation, damage, hostile lines; and the verdicts built on top.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fanout/agent_framing.h"
#include "fanout/collector.h"
#include "report/agent_format.h"

namespace hangscan {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  for (auto l : output_lines(text)) out.emplace_back(l);
  return out;
}

// What srun --label does to a task's stdout: every line labeled, and long lines cut into
// 1,024-byte pieces that are labeled again.
std::vector<std::string> srun_label(int task, const std::string& text) {
  std::vector<std::string> out;
  for (const auto& line : lines_of(text)) {
    for (std::size_t pos = 0; pos == 0 || pos < line.size(); pos += 1024) {
      out.push_back(fmt::format("{:>2}: {}", task, line.substr(pos, 1024)));
    }
  }
  return out;
}

std::string sample_document(std::size_t size) {
  std::string doc = "{\"schema\":\"hangscan-agent/1\",\"pad\":\"";
  for (std::size_t i = 0; doc.size() < size; ++i)
    doc += static_cast<char>('a' + i % 26) + std::string(i % 7 == 0 ? " " : "");
  doc += "\"}";
  return doc;
}

TEST(Frames, LinesStayShortAndReassembleExactly) {
  std::string doc = sample_document(5000);
  std::string framed = frame_begin("n1") + frame_document("n1", doc);
  for (const auto& l : lines_of(framed)) {
    EXPECT_LE(l.size(), kFrameTag.size() + 3 + kFrameChunk);
    EXPECT_NE(l.back(), ' ');
  }
  FrameCollector c;
  for (const auto& l : lines_of(framed)) c.add_line("0", l);
  auto out = c.outputs();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].state, NodeOutput::State::complete);
  EXPECT_EQ(out[0].node, "n1");
  EXPECT_EQ(out[0].document, doc);
  EXPECT_EQ(c.finished(), 1u);
}

TEST(Frames, InterleavedSrunTasksAreSplitByLabel) {
  std::string d1 = sample_document(3000), d2 = sample_document(2500), d3 = "{}";
  auto t0 = srun_label(0, frame_begin("n1") + frame_document("n1", d1));
  auto t1 = srun_label(1, frame_begin("n2") + frame_document("n2", d2));
  auto t2 = srun_label(2, frame_begin("gpu-7") + frame_document("gpu-7", d3));
  FrameCollector c;
  // Round-robin interleaving, plus srun's own chatter and a stray line of task 1.
  c.add_srun_line("srun: Job step created");
  c.add_srun_line(" 1: some library printed this");
  for (std::size_t i = 0; i < std::max({t0.size(), t1.size(), t2.size()}); ++i) {
    if (i < t2.size()) c.add_srun_line(t2[i]);
    if (i < t0.size()) c.add_srun_line(t0[i]);
    if (i < t1.size()) c.add_srun_line(t1[i]);
  }
  auto out = c.outputs();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].stream, "1");
  EXPECT_EQ(out[0].node, "n2");
  EXPECT_EQ(out[0].document, d2);
  EXPECT_EQ(out[0].noise, (std::vector<std::string>{"some library printed this"}));
  EXPECT_EQ(out[1].node, "gpu-7");
  EXPECT_EQ(out[1].document, d3);
  EXPECT_EQ(out[2].node, "n1");
  EXPECT_EQ(out[2].document, d1);
  EXPECT_EQ(c.finished(), 3u);
}

TEST(Frames, PdshLinesAreKeyedByHost) {
  FrameCollector c;
  std::string framed = frame_begin("login") + frame_document("login", "{\"a\":1}");
  for (const auto& l : lines_of(framed)) c.add_pdsh_line("n3: " + l);
  c.add_pdsh_line("pdsh@login: n4: ssh exited with exit code 255");  // not a host line
  auto out = c.outputs();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].stream, "n3");
  EXPECT_EQ(out[0].node, "login");
  EXPECT_EQ(out[0].document, "{\"a\":1}");
}

TEST(Frames, TruncatedDamagedAndFailedDocuments) {
  std::string doc = sample_document(2000);
  auto framed = lines_of(frame_begin("n1") + frame_document("n1", doc));
  FrameCollector c;
  // n1: the end line never comes.
  for (std::size_t i = 0; i + 1 < framed.size(); ++i) c.add_line("0", framed[i]);
  // n2: a data line is lost on the way.
  auto framed2 = lines_of(frame_begin("n2") + frame_document("n2", doc));
  for (std::size_t i = 0; i < framed2.size(); ++i) {
    if (i != 2) c.add_line("1", framed2[i]);
  }
  // n3: one byte changed.
  auto framed3 = lines_of(frame_begin("n3") + frame_document("n3", doc));
  framed3[1][20] = framed3[1][20] == 'x' ? 'y' : 'x';
  for (const auto& l : framed3) c.add_line("2", l);
  // n4: the agent gave up.
  c.add_line("3", lines_of(frame_begin("n4"))[0]);
  c.add_line("3", lines_of(frame_failure("n4", "ptrace: Operation not permitted\nsecond line"))[0]);
  // n5: data without begin, and a hostile node name.
  c.add_line("4", "HSAGENT1 d {}");
  c.add_line("5", "HSAGENT1 begin n1;reboot");

  auto out = c.outputs();
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[0].state, NodeOutput::State::begun);
  EXPECT_EQ(out[1].state, NodeOutput::State::failed);
  const std::size_t lost = framed2[2].size() - std::string("HSAGENT1 d ").size();
  EXPECT_EQ(out[1].reason, fmt::format("agent document damaged on the way: {} of {} bytes arrived",
                                       doc.size() - lost, doc.size()));
  EXPECT_EQ(out[2].state, NodeOutput::State::failed);
  EXPECT_EQ(out[2].reason, "agent document damaged on the way: checksum mismatch");
  EXPECT_EQ(out[3].state, NodeOutput::State::failed);
  EXPECT_EQ(out[3].node, "n4");
  EXPECT_EQ(out[3].reason, "ptrace: Operation not permitted?second line");
  EXPECT_EQ(out[4].reason, "agent data before its begin line");
  EXPECT_EQ(out[5].reason, "agent sent an invalid node name 'n1;reboot'");
  EXPECT_EQ(c.finished(), 5u);
}

TEST(Frames, DocumentSizeIsBounded) {
  FrameCollector c(1000);
  auto framed = lines_of(frame_begin("n1") + frame_document("n1", sample_document(5000)));
  for (const auto& l : framed) c.add_line("0", l);
  auto out = c.outputs();
  EXPECT_EQ(out[0].state, NodeOutput::State::failed);
  EXPECT_EQ(out[0].reason, "agent document larger than the limit of 1000 bytes");
  EXPECT_TRUE(out[0].document.empty());
}

TEST(Frames, LabelSplitting) {
  std::string_view a, b;
  ASSERT_TRUE(split_srun_label("12: HSAGENT1 x", a, b));
  EXPECT_EQ(a, "12");
  EXPECT_EQ(b, "HSAGENT1 x");
  ASSERT_TRUE(split_srun_label("  3: ", a, b));
  EXPECT_EQ(a, "3");
  EXPECT_EQ(b, "");
  EXPECT_FALSE(split_srun_label("srun: error: x", a, b));
  EXPECT_FALSE(split_srun_label("12 no colon", a, b));
  ASSERT_TRUE(split_pdsh_label("node-7: hello: world", a, b));
  EXPECT_EQ(a, "node-7");
  EXPECT_EQ(b, "hello: world");
  EXPECT_FALSE(split_pdsh_label("bad host: x", a, b));
  EXPECT_FALSE(split_pdsh_label(": x", a, b));
  EXPECT_EQ(last_output_line("a\n  last one \n\n"), "last one");
  EXPECT_EQ(last_output_line(""), "");
}

JobSnapshot one_process(const std::string& host, int pid, int rank) {
  JobSnapshot job;
  ProcessSnapshot p;
  p.host = host;
  p.pid = pid;
  p.rank = rank;
  p.role = "rank";
  ThreadSnapshot t;
  t.tid = pid;
  t.is_main = true;
  Frame f;
  f.kind = FrameKind::python;
  f.function = "all_reduce";
  f.file = "ring.py";
  f.line = 10;
  t.frames.push_back(f);
  p.threads.push_back(t);
  job.processes.push_back(p);
  return job;
}

TEST(Collector, VerdictsStampHostsAndNameEveryMissingNode) {
  FrameCollector c;
  // The agent on n2 claims its process is on "elsewhere": the front end knows better.
  for (const auto& l :
       lines_of(frame_begin("n2") +
                frame_document("n2", write_agent_json(one_process("elsewhere", 42, 3)))))
    c.add_srun_line("1: " + l);
  for (const auto& l : lines_of(frame_begin("n1") + frame_document("n1", "{not json")))
    c.add_srun_line("0: " + l);
  c.add_srun_line("2: " + frame_begin("n3").substr(0, frame_begin("n3").size() - 1));
  for (const auto& l : lines_of(frame_begin("n9") +
                                frame_document("n9", write_agent_json(one_process("n9", 1, 0)))))
    c.add_srun_line("3: " + l);

  VerdictBook book({"n1", "n2", "n3", "n4"});
  book.record(decode_outputs(c.outputs(), NodeKey::begin_line));
  // n1's document arrived whole (it is read later, and does not read): not asked again.
  EXPECT_EQ(book.answered(), 2u);
  EXPECT_EQ(book.pending(), (std::vector<std::string>{"n3", "n4"}));
  book.note_failure("n4", "srun could not start the agent there: Communication connection failure");
  AgentAnswers answers = std::move(book).finish("no answer within 30 s");
  ASSERT_EQ(answers.documents.size(), 2u);
  EXPECT_EQ(answers.documents[0].node, "n1");
  EXPECT_EQ(answers.documents[0].text, "{not json");
  EXPECT_EQ(answers.documents[1].agent_node, "n2");
  FanoutResult r = read_job_answers(std::move(answers));

  ASSERT_EQ(r.nodes.size(), 1u);
  EXPECT_EQ(r.nodes[0].first, "n2");
  ASSERT_EQ(r.nodes[0].second.processes.size(), 1u);
  EXPECT_EQ(r.nodes[0].second.processes[0].host, "n2");
  EXPECT_EQ(r.nodes[0].second.processes[0].rank, 3);
  ASSERT_EQ(r.unreachable.size(), 3u);
  EXPECT_EQ(r.unreachable[0].host, "n1");
  EXPECT_EQ(r.unreachable[0].reason.rfind("bad agent document: ", 0), 0u)
      << r.unreachable[0].reason;
  EXPECT_EQ(r.unreachable[1].host, "n3");
  EXPECT_EQ(r.unreachable[1].reason,
            "no answer within 30 s (agent started but its document did not arrive complete)");
  EXPECT_EQ(r.unreachable[2].host, "n4");
  EXPECT_EQ(r.unreachable[2].reason,
            "srun could not start the agent there: Communication connection failure");
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].message,
            "an answer came from node 'n9', which was not asked: ignored");

  JobSnapshot merged = r.merged("77", 8);
  EXPECT_EQ(merged.job_id, "77");
  EXPECT_EQ(merged.expected_world_size, 8);
  EXPECT_EQ(merged.processes.size(), 1u);
  EXPECT_EQ(merged.unreachable.size(), 3u);
}

TEST(Collector, AgentTimeoutLeavesRoomForTheRelay) {
  using std::chrono::milliseconds;
  EXPECT_EQ(agent_timeout_for(milliseconds(30000)), milliseconds(25000));
  EXPECT_EQ(agent_timeout_for(milliseconds(8000)), milliseconds(6000));
  EXPECT_EQ(agent_timeout_for(milliseconds(400)), milliseconds(500));
}

}  // namespace
}  // namespace hangscan
