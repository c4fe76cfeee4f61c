// Early notes on odd ranks: when they are said, what they say, and how they reach a terminal.
#include "fanout/early_suspects.h"

#include <gtest/gtest.h>

#include "fanout/early_reader.h"
#include "fanout/terminal_progress.h"
#include "report/agent_format.h"

namespace hangscan {
namespace {

Frame frame(const char* function, const char* file, int line) {
  Frame f;
  f.kind = FrameKind::python;
  f.function = function;
  f.file = file;
  f.line = line;
  return f;
}

// Ranks first..first+count-1 of node `host`; `odd` ranks wait in recv, the others all-reduce.
// The two stacks live as long as the test, as the run-wide stack table's do in a real run: the
// notes key on stack identity, so a stack freed between documents would be a dangling key (ASan
// keeps freed memory out of reuse, which is how this was found).
JobSnapshot node(const std::string& host, int first, int count, std::vector<int> odd = {}) {
  static const FrameStack reduce{frame("all_reduce", "/t/c10d.py", 1541)};
  static const FrameStack recv{frame("recv", "/t/io.py", 88)};
  JobSnapshot job;
  for (int r = first; r < first + count; ++r) {
    ProcessSnapshot p;
    p.host = host;
    p.pid = 100 + r;
    p.rank = r;
    ThreadSnapshot helper;  // not the main thread: ignored
    helper.tid = 9000 + r;
    helper.frames = recv;
    ThreadSnapshot t;
    t.tid = p.pid;
    t.is_main = true;
    t.frames = std::find(odd.begin(), odd.end(), r) != odd.end() ? recv : reduce;
    p.threads = {helper, t};
    job.processes.push_back(p);
  }
  return job;
}

TEST(EarlySuspects, NamesAClearOddRankOnceEnoughRanksAreRead) {
  EarlySuspects s;
  EXPECT_TRUE(s.add(node("n0", 0, 4, {2})).empty());  // 4 ranks: too few to say
  std::vector<EarlyNote> notes = s.add(node("n1", 4, 4));
  ASSERT_EQ(notes.size(), 1u);
  // The note as data: who, where, and the majority it differs from.
  EXPECT_EQ(notes[0].members, 1u);
  EXPECT_EQ(notes[0].first_rank, 2);
  EXPECT_EQ(notes[0].first_host, "n0");
  ASSERT_TRUE(notes[0].where);
  EXPECT_EQ(notes[0].where->function, "recv");
  EXPECT_EQ(notes[0].where->line, 88);
  EXPECT_EQ(notes[0].majority, 7u);
  EXPECT_EQ(notes[0].ranks_read, 8u);
  ASSERT_TRUE(notes[0].majority_where);
  EXPECT_EQ(notes[0].majority_where->function, "all_reduce");
  // Its words, made at the edge.
  EXPECT_EQ(early_note_words(notes[0]),
            "early: rank 2 (node n0) differs: in recv (/t/io.py:88); 7 of 8 ranks read so far are "
            "in all_reduce (/t/c10d.py:1541)");
  notes[0].members = 2;
  notes[0].first_host.clear();
  notes[0].where.reset();
  EXPECT_EQ(early_note_words(notes[0]),
            "early: 2 ranks (first rank 2) (node ?) differs: no stack; 7 of 8 ranks read so far "
            "are in all_reduce (/t/c10d.py:1541)");
  EXPECT_TRUE(s.add(node("n2", 8, 4)).empty());  // said once
}

TEST(EarlySuspects, SaysNothingWithoutAClearMajorityOrWithManyOdd) {
  EarlySuspects split;
  EXPECT_TRUE(split.add(node("n0", 0, 8, {0, 1, 2, 3})).empty());  // 4 of 8: no majority
  EarlySuspects many;
  // 2 of 20 in recv: a majority of 90%, but 2 > 5% of 20 (1): not a clear odd group.
  EXPECT_TRUE(many.add(node("n0", 0, 20, {3, 4})).empty());
  EarlySuspects limit({8, 0.75, 0.05, 1});
  ASSERT_EQ(limit.add(node("n0", 0, 30, {5})).size(), 1u);
  EXPECT_TRUE(limit.add(node("n1", 30, 30, {40})).empty());  // max_notes reached
}

TEST(EarlySuspects, EarlyReaderPassesNotesFromItsWorkers) {
  std::vector<std::string> notes;
  std::mutex mu;
  {
    EarlyReader early({}, 1, [&](const EarlyNote& n) {
      std::lock_guard<std::mutex> lock(mu);
      notes.push_back(early_note_words(n));
    });
    std::string a = write_agent_json(node("n0", 0, 8, {6}));
    early.submit(a);
    ASSERT_TRUE(early.take(a));
  }
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].substr(0, 34), "early: rank 6 (node n0) differs: i");
}

TEST(TerminalProgress, NoteGoesAboveTheLineWhichComesBack) {
  std::string screen;
  TerminalProgress tty(true, [&](std::string_view s) { screen += s; });
  tty.progress(NodeProgress{3, 0, 10});
  tty.note("early: rank 2 (node n0) differs: in recv");
  tty.progress(NodeProgress{10, 0, 10});
  EXPECT_EQ(screen,
            "\rhangscan: 3/10 nodes answered\x1b[K"
            "\rhangscan: early: rank 2 (node n0) differs: in recv\x1b[K\n"
            "hangscan: 3/10 nodes answered"
            "\rhangscan: 10/10 nodes answered\x1b[K\n");
  tty.note("early: after the end");  // no progress line to restore any more
  EXPECT_EQ(screen.substr(screen.size() - 34), "hangscan: early: after the end\x1b[K\n");
}

// A note quotes functions, files and node names from the ranks: escaped, one line.
TEST(TerminalProgress, NoteShowsNamesEscaped) {
  std::string screen;
  TerminalProgress tty(true, [&](std::string_view s) { screen += s; });
  tty.note("early: rank 2 (node n0) differs: in \x1b[2Jrecv\nFAKE");
  EXPECT_EQ(screen, "\rhangscan: early: rank 2 (node n0) differs: in \\x1b[2Jrecv\\nFAKE\x1b[K\n");
}

TEST(TerminalProgress, OffATerminalNothingIsWritten) {
  std::string screen;
  TerminalProgress pipe(false, [&](std::string_view s) { screen += s; });
  pipe.progress(NodeProgress{3, 1, 10});
  pipe.note("early: rank 2 (node n0) differs: in recv");
  EXPECT_EQ(screen, "");
  EXPECT_FALSE(pipe.on_terminal());
}

}  // namespace
}  // namespace hangscan
