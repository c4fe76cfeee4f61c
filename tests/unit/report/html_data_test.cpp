// The HTML page's data (report/html_writer.h): what ranks share is stored once, and nothing of
// a process, a thread or a frame is lost on the way.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report/html_writer.h"
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

}  // namespace
}  // namespace hangscan
