// Agent versions: every agent document names its hangscan; the front end refuses a node whose
// agent is another version with both versions in the reason (never reads it as garbage);
// `--version` lines are parsed exactly.
#include <gtest/gtest.h>

#include <string>

#include "fanout/agent_framing.h"
#include "fanout/agent_version.h"
#include "fanout/collector.h"
#include "report/agent_format.h"
#include "util/version.h"

namespace hangscan {
namespace {

JobSnapshot one_rank() {
  JobSnapshot job;
  ProcessSnapshot p;
  p.pid = 42;
  p.rank = 3;
  job.processes.push_back(p);
  return job;
}

// The node's document, framed as an agent prints it, through the collector to the front end.
FanoutResult answer_of(const std::string& node, const std::string& document) {
  FrameCollector c;
  std::string text = frame_begin(node) + frame_document(node, document);
  for (auto line : output_lines(text)) c.add_line(node, line);
  VerdictBook book({node});
  book.record(decode_outputs(c.outputs(), NodeKey::stream));
  return read_job_answers(std::move(book).finish("no answer"));
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

TEST(AgentVersion, DocumentsCarryTheVersionAndCommitFirst) {
  const std::string doc = write_agent_json(one_rank());
  const std::string head = "{\"agent_commit\":\"" + std::string(hangscan_commit()) +
                           "\",\"agent_version\":\"" + std::string(hangscan_version()) + "\",";
  EXPECT_EQ(doc.substr(0, head.size()), head);
  AgentVersion v = agent_document_version(doc);
  EXPECT_EQ(v.version, hangscan_version());
  EXPECT_EQ(v.commit, hangscan_commit());
  EXPECT_EQ(agent_version_mismatch(v), "");
}

TEST(AgentVersion, ReadAnywhereAtTopLevelOnly) {
  AgentVersion v = agent_document_version(
      R"({"processes":[{"agent_version":"9.9.9"}],"schema":"x","agent_version":"0.0.9","agent_commit":"abc"})");
  EXPECT_EQ(v.version, "0.0.9");
  EXPECT_EQ(v.commit, "abc");
  EXPECT_EQ(agent_document_version(R"({"processes":[{"agent_version":"9.9.9"}]})").version, "");
  EXPECT_EQ(agent_document_version("{not json").version, "");
  EXPECT_EQ(agent_document_version(R"({"agent_version":7})").version, "");
  EXPECT_EQ(agent_document_version("").version, "");
}

TEST(AgentVersion, SameVersionIsRead) {
  FanoutResult r = answer_of("n1", write_agent_json(one_rank()));
  ASSERT_EQ(r.nodes.size(), 1u);
  EXPECT_TRUE(r.unreachable.empty());
  EXPECT_EQ(r.nodes[0].second.processes.at(0).rank, 3);
}

TEST(AgentVersion, OtherVersionIsAClearErrorNotGarbage) {
  std::string doc = replaced(write_agent_json(one_rank()),
                             "\"agent_version\":\"" + std::string(hangscan_version()) + "\"",
                             "\"agent_version\":\"0.0.9\"");
  doc = replaced(doc, "\"agent_commit\":\"" + std::string(hangscan_commit()) + "\"",
                 "\"agent_commit\":\"0123456789ab\"");
  // Even a document this front end could not read at all is reported by its version.
  doc = replaced(doc, "\"schema\":\"hangscan-agent/1\"", "\"schema\":\"hangscan-agent/9\"");
  FanoutResult r = answer_of("n2", doc);
  EXPECT_TRUE(r.nodes.empty());
  ASSERT_EQ(r.unreachable.size(), 1u);
  EXPECT_EQ(r.unreachable[0].host, "n2");
  EXPECT_EQ(r.unreachable[0].reason,
            "the agent there is hangscan 0.0.9 (commit 0123456789ab), this front end is hangscan " +
                std::string(hangscan_version()) + " (commit " + std::string(hangscan_commit()) +
                "): answer not used (install the same hangscan on every node, or pass --agent-path "
                "to a copy "
                "of this version; 'hangscan doctor --agent-path PATH' on the node checks it)");
}

TEST(AgentVersion, AnAgentFromBeforeVersionsIsNamedSo) {
  std::string doc = write_agent_json(one_rank());
  doc = replaced(doc, "\"agent_commit\":\"" + std::string(hangscan_commit()) + "\",", "");
  doc = replaced(doc, "\"agent_version\":\"" + std::string(hangscan_version()) + "\",", "");
  FanoutResult r = answer_of("n3", doc);
  EXPECT_TRUE(r.nodes.empty());
  ASSERT_EQ(r.unreachable.size(), 1u);
  EXPECT_EQ(r.unreachable[0].reason.rfind("the agent there is an older hangscan (its answer names "
                                          "no version), this front end is hangscan ",
                                          0),
            0u)
      << r.unreachable[0].reason;
}

TEST(AgentVersion, VersionLines) {
  auto v = parse_version_line("hangscan 0.1.0 (commit 53b5ae4e0498)\n");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->version, "0.1.0");
  EXPECT_EQ(v->commit, "53b5ae4e0498");
  EXPECT_EQ(parse_version_line("hangscan 0.1.0 (commit unknown)")->commit, "unknown");
  EXPECT_FALSE(parse_version_line("hangscan 0.1.0"));
  EXPECT_FALSE(parse_version_line("true (GNU coreutils) 9.1"));
  EXPECT_FALSE(parse_version_line("hangscan  (commit x)"));
  EXPECT_FALSE(parse_version_line("hangscan 0.1.0 (commit )"));
  EXPECT_FALSE(parse_version_line(""));
  EXPECT_EQ(parse_version_line(hangscan_version_line())->version, hangscan_version());
}

}  // namespace
}  // namespace hangscan
