// The watch report's words for who woke a wait (a task, no task, or not known on this kernel),
// and for a sampled stack cut short.
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
  // A Python stack cut short: its gap frame says where; hidden past the shown frames, the
  // elision line says it is among them, and no mark follows its outermost Python frame.
  StackShare deep{{}, true, 5, 0.1};
  for (int i = 0; i < 20; ++i) {
    Frame g;
    g.kind = i < 14 ? FrameKind::native : FrameKind::python;
    g.function = i == 14 ? std::string(python::kNativeGap) : "f" + std::to_string(i);
    deep.frames.push_back(g);
  }
  WatchReport d = one_wait(0, true);
  d.processes[0].top.push_back(deep);
  std::string deep_text = watch_text(d);
  EXPECT_NE(
      deep_text.find("... 8 more frames (native frames missing among them: the stack was cut)"),
      std::string::npos)
      << deep_text;
  EXPECT_EQ(deep_text.find(mark), std::string::npos) << deep_text;
  auto j = watch_json(r)["processes"][0];
  EXPECT_EQ(j["top_stacks"][0]["incomplete"], true);
  EXPECT_EQ(j["top_stacks"][1]["incomplete"], false);
  EXPECT_EQ(j["waits"][0]["incomplete"], false);
}

}  // namespace
}  // namespace hangscan
