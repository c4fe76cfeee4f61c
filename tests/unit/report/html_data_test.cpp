// The HTML page's data (report/html_writer.h): what ranks share is stored once, nothing of a
// process, a thread or a frame is lost on the way, and the verdict is the text report's, tied to
// the findings.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "report/html_writer.h"
#include "report/report_writers.h"
#include "util/stack_table.h"

namespace hangscan {
namespace {

using nlohmann::json;

Frame py(std::string function, int line) {
  Frame f;
  f.kind = FrameKind::python;
  f.function = std::move(function);
  f.file = "/job/train.py";
  f.line = line;
  return f;
}

// `ranks` ranks of two threads each; rank `odd` waits elsewhere.
JobSnapshot job_of(int ranks, int odd) {
  JobSnapshot job;
  StackTable stacks;
  for (int r = 0; r < ranks; ++r) {
    ProcessSnapshot p;
    p.host = "n1";
    p.pid = 100 + r;
    p.rank = r;
    p.role = "rank";
    p.cmdline = {"python3", "train.py"};
    p.state = 'S';
    for (int k = 0; k < 2; ++k) {
      ThreadSnapshot t;
      t.tid = p.pid + 1000 * k;
      t.name = k == 0 ? "python3" : "gloo";
      t.state = 'S';
      t.is_main = k == 0;
      t.blocked_s = 1.5 + r;
      std::vector<Frame> frames = {py(r == odd && k == 0 ? "recv" : "all_reduce", 10 + k),
                                   py("main", 3)};
      t.frames = stacks.intern(FrameStack(std::move(frames)));
      p.threads.push_back(std::move(t));
    }
    job.processes.push_back(std::move(p));
  }
  return job;
}

TEST(HtmlData, SharedPartsAreStoredOnce) {
  JobSnapshot job = job_of(4, 2);
  Analysis a = analyze(job, GroupOptions{});
  json doc = json::parse(html_page_data(job, a));
  EXPECT_EQ(doc["schema"], "hangscan-html/1");
  // Frames: all_reduce:10, main:3, all_reduce:11, recv:10; stacks: those three and the empty
  // one (native and kernel frames).
  EXPECT_EQ(doc["frames"].size(), 4u);
  EXPECT_EQ(doc["stacks"].size(), 4u);
  EXPECT_EQ(doc["process_shapes"].size(), 1u);
  EXPECT_EQ(
      doc["process_shapes"][0],
      json::parse(
          R"({"cmdline":["python3","train.py"],"exe":"","launcher":"","role":"rank","state":"S"})"));
  // Thread shapes: main (majority), main (odd), gloo: each once however many ranks hold it.
  EXPECT_EQ(doc["thread_shapes"].size(), 3u);
  const json& columns = doc["process_columns"];
  ASSERT_EQ(doc["processes"].size(), 4u);
  const json& odd = doc["processes"][2];
  auto column = [&](const char* name) {
    for (std::size_t i = 0; i < columns.size(); ++i)
      if (columns[i] == name) return i < odd.size() ? odd[i] : json(nullptr);
    return json(nullptr);
  };
  EXPECT_EQ(column("pid"), 102);
  EXPECT_EQ(column("rank"), 2);
  EXPECT_EQ(column("host"), "n1");
  const json& threads = column("threads");
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0][0], 102);  // tid
  EXPECT_EQ(threads[0][2], 3.5);  // blocked_s
  EXPECT_EQ(threads[1][0], 1102);
  const json& main_shape = doc["thread_shapes"][threads[0][1].get<std::size_t>()];
  EXPECT_EQ(main_shape["name"], "python3");
  EXPECT_EQ(main_shape["is_main"], true);
  const json& stack = doc["stacks"][main_shape["frames"].get<std::size_t>()];
  EXPECT_EQ(doc["frames"][stack[0].get<std::size_t>()]["function"], "recv");
  // A group's frames are a stack index too; the verdict stays as the JSON writer has it.
  EXPECT_TRUE(doc["groups"][0]["frames"].is_number());
  EXPECT_EQ(doc["suspects"], json::array({2}));
}

TEST(HtmlData, GrowsWithDistinctStacksNotRanks) {
  auto size_of = [](int ranks) {
    JobSnapshot job = job_of(ranks, 1);
    return html_page_data(job, analyze(job, GroupOptions{})).size();
  };
  std::size_t hundred = size_of(100), thousand = size_of(1000);
  // Per rank only its row (pid, rank, host, two [tid, shape, blocked_s]): well under 100 bytes.
  EXPECT_LT((thousand - hundred) / 900, 100u) << hundred << " " << thousand;
}

TEST(HtmlData, ScriptCannotBeClosedFromTheData) {
  EXPECT_EQ(json_for_script(R"({"f":"</script><!--"})"), R"({"f":"\u003c/script>\u003c!--"})");
}

// The verdict (report/html_verdict.h): each line is the text report's line, tied to its
// finding, and each finding names the nodes of the page's tree where its members are.

// Four ranks in main -> step -> all_reduce; rank 2 in main -> step -> load -> step -> recv (a
// recursion: the frame where it parted is the outer step, not the deeper one). Ranks 0, 1
// and 3 wait on their right neighbour, rank 3 on rank 2: a chain 0 -> 1 -> 3 ending at rank 2.
JobSnapshot ring_job() {
  JobSnapshot job;
  StackTable stacks;
  for (int r = 0; r < 4; ++r) {
    ProcessSnapshot p;
    p.host = "n1";
    p.pid = 100 + r;
    p.rank = r;
    p.role = "rank";
    p.state = 'S';
    ThreadSnapshot t;
    t.tid = p.pid;
    t.state = 'S';
    t.is_main = true;
    std::vector<Frame> frames = {py("all_reduce", 30), py("step", 20), py("main", 3)};
    if (r == 2)
      frames = {py("recv", 40), py("step", 22), py("load", 21), py("step", 20), py("main", 3)};
    t.frames = stacks.intern(FrameStack(std::move(frames)));
    if (r != 2) {
      WaitEdge e;
      e.host = "n1";
      e.rank = r == 0 ? 1 : r == 1 ? 3 : 2;
      e.pid = 100 + *e.rank;
      e.via = "pipe:[7]";
      t.waits_on.push_back(e);
    }
    p.threads.push_back(std::move(t));
    job.processes.push_back(std::move(p));
  }
  return job;
}

// The text report's verdict: the lines after its title, up to the first empty one.
std::vector<std::string> text_verdict(const JobSnapshot& job, const Analysis& a) {
  std::istringstream text(find_report_writer("text")->render(job, a, RenderOptions{}));
  std::vector<std::string> out;
  std::string line;
  std::getline(text, line);
  while (std::getline(text, line) && !line.empty()) out.push_back(line);
  return out;
}

TEST(HtmlVerdict, LinesAreTheTextReportsTiedToTheirFindings) {
  JobSnapshot job = ring_job();
  Analysis a = analyze(job, GroupOptions{});
  json doc = json::parse(html_page_data(job, a));
  std::vector<std::string> texts;
  for (const json& v : doc["verdict"]) texts.push_back(v["text"]);
  EXPECT_EQ(texts, text_verdict(job, a));
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_EQ(texts[0],
            "SUSPECT rank 2 is not in all_reduce with ranks 0-1,3: it is in step (train.py:20) -> "
            "load (train.py:21) -> ... -> recv (train.py:40)");
  EXPECT_EQ(texts[1],
            "waits: ranks 0 -> 1 -> 3 wait on rank 2, which waits on nothing hangscan can follow "
            "(train.py:40)");
  const json& suspect = doc["findings"][doc["verdict"][0]["finding"].get<std::size_t>()];
  EXPECT_EQ(suspect["kind"], "divergence");
  EXPECT_EQ(suspect["members"], json::array({2}));
  // Group 0 is rank 2's (smallest first): main, step, load, step, recv; group 1 the others'.
  EXPECT_EQ(suspect["nodes"], json::parse("[[0, 2], [0, 3], [0, 5]]"));
  EXPECT_EQ(suspect["place_node"], json::parse("[1, 3]"));
  const json& chain = doc["findings"][doc["verdict"][1]["finding"].get<std::size_t>()];
  EXPECT_EQ(chain["kind"], "wait_chain");
  EXPECT_EQ(chain["members"], json::array({0, 1, 3}));
  EXPECT_EQ(chain["others"], json::array({2}));
  EXPECT_EQ(chain["nodes"], json::parse("[[1, 3]]"));  // no frames: where its members' group ends
}

}  // namespace
}  // namespace hangscan
