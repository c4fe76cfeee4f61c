// Merging native and Python frames into true call order, and matching threads.
#include <gtest/gtest.h>

#include "python/merge.h"

namespace hangscan::python {
namespace {

Frame native(const std::string& fn, FrameKind kind = FrameKind::native) {
  Frame f;
  f.kind = kind;
  f.function = fn;
  f.module = "/usr/bin/python3";
  return f;
}

PythonFrame py(const std::string& fn, int line, bool entry) {
  PythonFrame p;
  p.frame.kind = FrameKind::python;
  p.frame.function = fn;
  p.frame.file = "/app.py";
  p.frame.line = line;
  p.entry = entry;
  return p;
}

std::vector<std::string> names(const std::vector<Frame>& frames) {
  std::vector<std::string> out;
  for (const auto& f : frames) out.push_back(f.function);
  return out;
}

TEST(Merge, OneEvalCallPerPythonFrame) {
  // 3.6-3.10: every Python frame has its own _PyEval_EvalFrameDefault.
  std::vector<Frame> n = {native("__select"),
                          native("select_select"),
                          native("_PyEval_EvalFrameDefault"),
                          native("_PyFunction_Vectorcall"),
                          native("_PyEval_EvalFrameDefault"),
                          native("PyRun_SimpleFile"),
                          native("main")};
  std::vector<PythonFrame> p = {py("wait_select", 68, true), py("<module>", 200, true)};
  auto merged = merge_stacks(n, p);
  ASSERT_TRUE(merged.ok()) << merged.error().what();
  EXPECT_EQ(names(*merged), (std::vector<std::string>{"__select", "select_select", "wait_select",
                                                      "_PyFunction_Vectorcall", "<module>",
                                                      "PyRun_SimpleFile", "main"}));
  EXPECT_EQ((*merged)[2].kind, FrameKind::python);
  EXPECT_EQ((*merged)[2].line, 68);
}

TEST(Merge, SeveralPythonFramesPerEvalCallOn311) {
  // 3.11+: Python-to-Python calls stay in one eval call; entry frames end each call.
  std::vector<Frame> n = {native("clock_nanosleep"),
                          native("time_sleep"),
                          native("PyObject_Vectorcall", FrameKind::inline_frame),
                          native("_PyEval_EvalFrameDefault"),
                          native("thread_run"),
                          native("_PyEval_EvalFrameDefault.cold"),
                          native("Py_RunMain")};
  std::vector<PythonFrame> p = {py("sleeper", 63, false), py("Thread.run", 975, true),
                                py("outer", 10, false), py("<module>", 1, true)};
  auto merged = merge_stacks(n, p);
  ASSERT_TRUE(merged.ok()) << merged.error().what();
  EXPECT_EQ(names(*merged), (std::vector<std::string>{
                                "clock_nanosleep", "time_sleep", "PyObject_Vectorcall", "sleeper",
                                "Thread.run", "thread_run", "outer", "<module>", "Py_RunMain"}));
}

// A native stack cut short (a sampled copy ended) holds the innermost eval-loop calls only:
// they are merged, a gap frame says where native frames are missing, the outer calls' Python
// frames follow whole. More eval frames than Python calls cannot be a cut: refused.
TEST(Merge, ACutNativeStackKeepsTheWholePythonChain) {
  std::vector<Frame> n = {native("clock_nanosleep"), native("time_sleep"),
                          native("_PyEval_EvalFrameDefault"), native("thread_run")};
  std::vector<PythonFrame> p = {py("sleeper", 63, false), py("Thread.run", 975, true),
                                py("outer", 10, false), py("<module>", 1, true)};
  auto merged = merge_cut_stacks(n, p);
  ASSERT_TRUE(merged.ok()) << merged.error().what();
  EXPECT_EQ(names(*merged),
            (std::vector<std::string>{"clock_nanosleep", "time_sleep", "sleeper", "Thread.run",
                                      "thread_run", std::string(kNativeGap), "outer", "<module>"}));
  EXPECT_FALSE(merge_stacks(n, p).ok());  // the whole-stack merge refuses it

  std::vector<Frame> none = {native("memcpy"), native("deep_kernel")};
  auto outer_only = merge_cut_stacks(none, p);
  ASSERT_TRUE(outer_only.ok());
  EXPECT_EQ(names(*outer_only).size(), 2u + 1u + 4u);
  EXPECT_EQ((*outer_only)[2].function, kNativeGap);

  std::vector<Frame> three = {native("_PyEval_EvalFrameDefault"),
                              native("_PyEval_EvalFrameDefault"),
                              native("_PyEval_EvalFrameDefault")};
  EXPECT_FALSE(merge_cut_stacks(three, p).ok());
  // Reaching every call, nothing is missing between the Python frames: no gap.
  std::vector<Frame> whole = {native("time_sleep"), native("_PyEval_EvalFrameDefault"),
                              native("thread_run"), native("_PyEval_EvalFrameDefault")};
  auto all = merge_cut_stacks(whole, p);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(names(*all), (std::vector<std::string>{"time_sleep", "sleeper", "Thread.run",
                                                   "thread_run", "outer", "<module>"}));
}

Frame at_sp(Frame f, std::uint64_t sp) {
  f.sp = sp;
  return f;
}

PythonFrame marked(PythonFrame p, std::uint64_t marker) {
  p.eval_marker = marker;
  return p;
}

TEST(Merge, StrippedEvalFramesAreFoundByTheirEntryMarkers) {
  // No symbols: the frame whose [sp, caller's sp) holds a call's marker is its eval loop.
  std::vector<Frame> n = {at_sp(native("??"), 0x1000),   // clock_nanosleep
                          at_sp(native("??"), 0x1040),   // time_sleep
                          at_sp(native("??"), 0x1100),   // eval loop (marker 0x1180)
                          at_sp(native("??"), 0x1400),   // thread_run
                          at_sp(native("??"), 0x1480),   // eval loop (marker 0x1490)
                          at_sp(native("??"), 0x1800)};  // Py_RunMain
  std::vector<PythonFrame> p = {py("sleeper", 63, false),
                                marked(py("Thread.run", 975, true), 0x1180), py("outer", 10, false),
                                marked(py("<module>", 1, true), 0x1490)};
  auto merged = merge_stacks(n, p);
  ASSERT_TRUE(merged.ok()) << merged.error().what();
  EXPECT_EQ(names(*merged), (std::vector<std::string>{"??", "??", "sleeper", "Thread.run", "??",
                                                      "outer", "<module>", "??"}));
  EXPECT_EQ((*merged)[4].sp, 0x1400U);
}

TEST(Merge, MarkersWinOverNamesAndInlineFramesShareTheirFrame) {
  // The marker names the physical frame; the inline frames at its pc stay above the calls.
  std::vector<Frame> n = {
      at_sp(native("select"), 0x100), at_sp(native("inlined", FrameKind::inline_frame), 0x200),
      at_sp(native("_PyEval_EvalFrameDefault"), 0x200), at_sp(native("main"), 0x300)};
  auto merged = merge_stacks(n, {marked(py("f", 1, true), 0x2f8)});
  ASSERT_TRUE(merged.ok()) << merged.error().what();
  EXPECT_EQ(names(*merged), (std::vector<std::string>{"select", "inlined", "f", "main"}));
}

TEST(Merge, AMarkerOutsideEveryFrameFallsBackToNames) {
  std::vector<Frame> n = {at_sp(native("??"), 0x100), at_sp(native("main"), 0x300)};
  auto merged = merge_stacks(n, {marked(py("f", 1, true), 0x900)});
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.error().what().find("0 native eval-loop frames"), std::string::npos);
  // Out of call order (the outer call's marker below the inner one's): refused as well.
  std::vector<Frame> m = {at_sp(native("??"), 0x100), at_sp(native("??"), 0x200),
                          at_sp(native("main"), 0x300)};
  EXPECT_FALSE(
      merge_stacks(m, {marked(py("g", 1, true), 0x210), marked(py("f", 1, true), 0x110)}).ok());
}

TEST(Merge, CountMismatchIsAnErrorThatSaysWhy) {
  std::vector<Frame> n = {native("poll"), native("_PyEval_EvalFrameDefault"), native("main")};
  std::vector<PythonFrame> p = {py("a", 1, true), py("b", 2, true)};
  auto merged = merge_stacks(n, p);
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.error().message.find("2 Python eval-loop calls"), std::string::npos)
      << merged.error().message;
  EXPECT_NE(merged.error().message.find("1 native eval-loop frames"), std::string::npos);
  // A native stack without any eval frame (a truncated unwind) cannot be merged either.
  EXPECT_FALSE(merge_stacks({native("poll")}, p).ok());
}

TEST(Merge, InlineEvalFramesDoNotCountAndExIsAFallback) {
  // An inlined _PyEval_EvalFrame helper shares the physical frame: not a separate call.
  std::vector<Frame> n = {native("pause"),
                          native("_PyEval_EvalFrameDefault", FrameKind::inline_frame),
                          native("_PyEval_EvalFrameDefault"), native("main")};
  auto merged = merge_stacks(n, {py("f", 1, true)});
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(names(*merged),
            (std::vector<std::string>{"pause", "_PyEval_EvalFrameDefault", "f", "main"}));
  // PyEval_EvalFrameEx wraps _PyEval_EvalFrameDefault on 3.6: only the latter counts...
  std::vector<Frame> n36 = {native("sleep"), native("_PyEval_EvalFrameDefault"),
                            native("PyEval_EvalFrameEx"), native("main")};
  merged = merge_stacks(n36, {py("f", 1, true)});
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(names(*merged), (std::vector<std::string>{"sleep", "f", "PyEval_EvalFrameEx", "main"}));
  // ...unless it is the only eval-loop name present.
  merged = merge_stacks({native("sleep"), native("PyEval_EvalFrameEx")}, {py("f", 1, true)});
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(names(*merged), (std::vector<std::string>{"sleep", "f"}));
  EXPECT_TRUE(is_eval_frame("_PyEval_EvalFrameDefault.cold"));
  EXPECT_FALSE(is_eval_frame("_PyEval_EvalFrameDefaultX"));
}

TEST(Merge, NoPythonFramesAndNoEvalFramesIsTheNativeStack) {
  std::vector<Frame> n = {native("poll"), native("main")};
  auto merged = merge_stacks(n, {});
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(*merged, n);
}

TEST(Merge, EvalGroupsEndAtEntryFrames) {
  auto groups = eval_groups({py("a", 1, false), py("b", 2, true), py("c", 3, false)});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].size(), 2u);
  EXPECT_EQ(groups[1].size(), 1u);  // a cut chain's tail is still one call
}

TEST(MatchThreads, ByNativeTidThenByPthreadIdEqualsFsBase) {
  std::vector<PythonThreadStack> stacks(3);
  stacks[0].native_tid = 100;
  stacks[0].pthread_id = 0x7000;
  stacks[1].pthread_id = 0x8000;  // pre-3.11: no native id
  stacks[2].pthread_id = 0x9000;
  EXPECT_EQ(find_python_thread(stacks, 100, std::nullopt), 0u);
  EXPECT_EQ(find_python_thread(stacks, 101, 0x8000), 1u);
  EXPECT_EQ(find_python_thread(stacks, 102, 0x9000), 2u);
  EXPECT_EQ(find_python_thread(stacks, 103, 0x7000), std::nullopt);  // has a tid: must match it
  EXPECT_EQ(find_python_thread(stacks, 104, std::nullopt), std::nullopt);
  EXPECT_EQ(find_python_thread(stacks, 105, 0), std::nullopt);
}

}  // namespace
}  // namespace hangscan::python
