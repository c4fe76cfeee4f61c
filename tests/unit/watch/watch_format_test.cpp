// The watch report's words for who woke a wait (a task, no task, or not known on this kernel),
// for a sampled stack cut short, and for a stack deeper than the frames shown.
#include <gtest/gtest.h>

#include <string>

#include "python/merge.h"
#include "watch/watch_format.h"
#include "watch/watch_report.h"

namespace hangscan {
namespace {

WatchReport one_wait(int waker_pid, bool known) {
  WaitView w;
  w.tid = 11;
  w.syscall = "read";
  w.syscall_nr = 0;
  w.duration_s = w.offcpu_s = 0.25;
  w.end_s = 1.5;
  w.waker_pid = waker_pid;
  w.waker_tid = waker_pid + 1;
  w.waker_comm = waker_pid ? "writer" : "";
  w.waker_known = known;
  ProcessWatch p;
  p.pid = 10;
  p.comm = "python3";
  p.waits.push_back(w);
  WatchReport r;
  r.recorder = "ebpf";
  r.wakers_known = known;
  r.processes.push_back(p);
  return r;
}

TEST(WatchFormat, NamesTheWakingTask) {
  auto r = one_wait(20, true);
  EXPECT_NE(
      watch_text(r).find("0.250 s in read() (thread 11, 0.250 s off CPU, ran again at +1.50 s, "
                         "woken by pid 20 tid 21 (writer))"),
      std::string::npos)
      << watch_text(r);
  auto j = watch_json(r);
  EXPECT_EQ(j["processes"][0]["waits"][0]["waker"]["tid"], 21);
  EXPECT_EQ(j["wakers_known"], true);
}

TEST(WatchFormat, NoTaskWokeItSaysSo) {
  auto r = one_wait(0, true);
  EXPECT_NE(watch_text(r).find("not woken by another task (a timeout or an interrupt)"),
            std::string::npos)
      << watch_text(r);
  EXPECT_TRUE(watch_json(r)["processes"][0]["waits"][0]["waker"].is_null());
}

// Command and function names come from the target: shown escaped (util/escape.h), so a name
// cannot drive the terminal or add a line of its own.
TEST(WatchFormat, NamesFromTargetsAreEscaped) {
  auto r = one_wait(20, true);
  r.processes[0].comm = "py\x1b]0;T\x07\nnote: FAKE";
  r.processes[0].waits[0].waker_comm = "w\r\n";
  Frame f;
  f.kind = FrameKind::python;
  f.function = "run\nSUSPECT";
  r.processes[0].waits[0].frames = {f};
  std::string text = watch_text(r);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_NE(text.find("\npid 10 (py\\x1b]0;T\\x07\\nnote: FAKE): on CPU"), std::string::npos)
      << text;
  EXPECT_NE(text.find("woken by pid 20 tid 21 (w\\r\\n))\n        run\\nSUSPECT\n"),
            std::string::npos)
      << text;
}

// Where the kernel's BTF does not place the preempt count, no waker is kept: the text claims
// nothing and the JSON says wakers are not known.
TEST(WatchFormat, UnknownWakersAreNotClaimed) {
  auto r = one_wait(0, false);
  std::string text = watch_text(r);
  EXPECT_EQ(text.find("woken"), std::string::npos) << text;
  EXPECT_NE(text.find("ran again at +1.50 s)"), std::string::npos) << text;
  EXPECT_EQ(watch_json(r)["wakers_known"], false);
}

// A stack whose unwinding stopped before the thread's entry point says so after its last
// frame, in the text and the JSON; a whole one says nothing.
TEST(WatchFormat, ACutStackIsMarkedIncomplete) {
  WatchReport r = one_wait(0, true);
  Frame f;
  f.function = "deeper_frame";
  r.processes[0].top.push_back(StackShare{{f}, true, 10, 0.5});
  r.processes[0].top.push_back(StackShare{{f}, false, 10, 0.5});
  std::string text = watch_text(r);
  std::string mark = "... (stack incomplete: the unwinding stopped here)";
  auto at = text.find(mark);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_EQ(text.find(mark, at + 1), std::string::npos) << text;
  EXPECT_LT(text.find("deeper_frame"), at) << text;
  // A Python stack cut short (as merge_cut_stacks makes it): past the 12 innermost frames,
  // the hidden native frames are one line, its gap frame and its outer Python frames are
  // shown, and no mark follows its outermost Python frame.
  StackShare deep{{}, true, 5, 0.1};
  for (int i = 0; i < 20; ++i) {
    Frame g;
    g.kind = i <= 14 ? FrameKind::native : FrameKind::python;
    g.function = i == 14 ? std::string(python::kNativeGap) : "f" + std::to_string(i);
    deep.frames.push_back(g);
  }
  WatchReport d = one_wait(0, true);
  d.processes[0].top.push_back(deep);
  std::string deep_text = watch_text(d);
  EXPECT_NE(deep_text.find("      f11\n      ... 2 native frames\n      " +
                           std::string(python::kNativeGap) +
                           "\n      f15\n      f16\n      f17\n      f18\n      f19\n"),
            std::string::npos)
      << deep_text;
  EXPECT_EQ(deep_text.find(mark), std::string::npos) << deep_text;
  auto j = watch_json(r)["processes"][0];
  EXPECT_EQ(j["top_stacks"][0]["incomplete"], true);
  EXPECT_EQ(j["top_stacks"][1]["incomplete"], false);
  EXPECT_EQ(j["waits"][0]["incomplete"], false);
}

// A stack deeper than the 12 frames shown (a sample inside torch): the Python frames past them
// are shown, each run of native frames between them is one line; past 12 more Python frames,
// one line counts the rest.
TEST(WatchFormat, ADeepNativeStackShowsWhereThePythonCodeCalledIt) {
  auto frame = [](FrameKind kind, const std::string& name) {
    Frame f;
    f.kind = kind;
    f.function = name;
    if (kind == FrameKind::python) {
      f.file = "train.py";
      f.line = 7;
    }
    return f;
  };
  StackShare deep{{}, false, 5, 0.5};
  for (int i = 0; i < 40; ++i)
    deep.frames.push_back(frame(FrameKind::native, "n" + std::to_string(i)));
  deep.frames.push_back(frame(FrameKind::python, "step"));
  deep.frames.push_back(frame(FrameKind::inline_frame, "eval_inline"));
  deep.frames.push_back(frame(FrameKind::native, "eval"));
  deep.frames.push_back(frame(FrameKind::python, "main"));
  for (int i = 0; i < 5; ++i)
    deep.frames.push_back(frame(FrameKind::native, "m" + std::to_string(i)));
  WatchReport r = one_wait(0, true);
  r.processes[0].top.push_back(deep);
  std::string text = watch_text(r);
  EXPECT_NE(text.find("      n11\n      ... 28 native frames\n      step (train.py:7)\n"
                      "      ... 2 native frames\n      main (train.py:7)\n"
                      "      ... 5 native frames\n  longest waits"),
            std::string::npos)
      << text;

  StackShare python{{}, false, 5, 0.5};
  for (int i = 0; i < 13; ++i)
    python.frames.push_back(frame(FrameKind::native, "n" + std::to_string(i)));
  for (int i = 0; i < 30; ++i)
    python.frames.push_back(frame(FrameKind::python, "p" + std::to_string(i)));
  python.frames.push_back(frame(FrameKind::native, "main"));
  WatchReport q = one_wait(0, true);
  q.processes[0].top.push_back(python);
  std::string qtext = watch_text(q);
  EXPECT_NE(qtext.find("      n11\n      ... 1 native frame\n      p0 (train.py:7)\n"),
            std::string::npos)
      << qtext;
  EXPECT_NE(qtext.find("      p11 (train.py:7)\n      ... 19 more frames\n  longest waits"),
            std::string::npos)
      << qtext;
  EXPECT_EQ(qtext.find("p12 "), std::string::npos) << qtext;
}

}  // namespace
}  // namespace hangscan
