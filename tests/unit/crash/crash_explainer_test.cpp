// The crash rules on fabricated snapshots, and the C++ exception decoder on fabricated memory.
#include "crash/crash_explainer.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <set>

namespace hangscan {
namespace {

Frame native(std::string fn, std::string file = {}, int line = 0) {
  Frame f;
  f.function = std::move(fn);
  if (!file.empty()) {
    f.file = std::move(file);
    f.line = line;
  }
  f.module = "/usr/lib/libx.so";
  return f;
}

Frame python(std::string fn, std::string file, int line) {
  Frame f;
  f.kind = FrameKind::python;
  f.function = std::move(fn);
  f.file = std::move(file);
  f.line = line;
  return f;
}

ProcessSnapshot crashed(int sig, int code, std::optional<std::uint64_t> addr,
                        std::vector<Frame> frames, std::optional<int> sender = std::nullopt) {
  ProcessSnapshot p;
  p.pid = 100;
  ThreadSnapshot t;
  t.tid = 101;
  t.crashed = true;
  t.frames = std::move(frames);
  p.threads.push_back(std::move(t));
  CoreInfo c;
  c.signal = SignalInfo{sig,
                        sig == SIGSEGV   ? "SIGSEGV"
                        : sig == SIGABRT ? "SIGABRT"
                                         : "SIG",
                        addr, code, sender};
  c.crashed_tid = 101;
  p.core = c;
  return p;
}

std::vector<Frame> abort_stack(std::vector<Frame> callers) {
  std::vector<Frame> f = {native("__pthread_kill_implementation"), native("raise"),
                          native("__GI_abort")};
  f.insert(f.end(), callers.begin(), callers.end());
  return f;
}

TEST(CrashExplainer, NothingWithoutASignal) {
  ProcessSnapshot p;
  EXPECT_TRUE(explain_crash(p, CrashFacts{}).empty());
  p.core = CoreInfo{};
  EXPECT_TRUE(explain_crash(p, CrashFacts{}).empty());
}

TEST(CrashExplainer, NullPointerNamesTheFunction) {
  auto p = crashed(SIGSEGV, 1, 0x18, {native("Foo::bar(int) const", "/src/foo.cc", 12)});
  EXPECT_EQ(explain_crash(p, CrashFacts{}),
            std::vector<std::string>{"SIGSEGV at address 0x18: a null pointer dereference (a "
                                     "field 24 bytes into a null object) in Foo::bar(int) const "
                                     "(foo.cc:12)"});
}

TEST(CrashExplainer, StackOverflowByAddressNearSp) {
  auto p = crashed(SIGSEGV, 1, 0x7ffd0000f000, {native("walk")});
  CrashFacts f;
  f.sp = 0x7ffd0000f010;
  auto s = explain_crash(p, f);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0], "SIGSEGV at address 0x7ffd0000f000: stack overflow: the thread ran out of stack");
}

TEST(CrashExplainer, SegvReasons) {
  auto p = crashed(SIGSEGV, 2, 0x401000, {native("poke")});
  EXPECT_EQ(explain_crash(p, CrashFacts{})[0].substr(0, 60),
            std::string("SIGSEGV at address 0x401000: the memory there does not allow this access")
                .substr(0, 60));
}

TEST(CrashExplainer, SentSignal) {
  auto p = crashed(SIGSEGV, 0, std::nullopt, {native("poll")}, 4242);
  EXPECT_EQ(explain_crash(p, CrashFacts{})[0],
            "SIGSEGV was sent by another process (pid 4242) with kill(): the program did not "
            "fault, it was killed");
}

TEST(CrashExplainer, AbortNamesItsCaller) {
  auto p = crashed(SIGABRT, -6, std::nullopt, abort_stack({native("give_up", "/a/b.c", 7)}), 100);
  EXPECT_EQ(explain_crash(p, CrashFacts{})[0],
            "abort() was called by give_up (b.c:7) and raised SIGABRT");
}

TEST(CrashExplainer, AssertionWithGlibcMessage) {
  auto p = crashed(
      SIGABRT, -6, std::nullopt,
      abort_stack({native("__assert_fail_base"), native("__assert_fail"), native("f")}), 100);
  CrashFacts f;
  f.abort_message = "prog: x.c:3: f: Assertion `n > 0' failed.";
  EXPECT_EQ(
      explain_crash(p, f)[0],
      "an assertion failed: \"prog: x.c:3: f: Assertion `n > 0' failed.\"; abort() raised SIGABRT");
}

TEST(CrashExplainer, HeapCorruption) {
  auto p = crashed(
      SIGABRT, -6, std::nullopt,
      abort_stack({native("__libc_message"), native("malloc_printerr"), native("_int_free")}), 100);
  CrashFacts f;
  f.abort_message = "double free or corruption (out)";
  EXPECT_EQ(explain_crash(p, f)[0].rfind("glibc detected heap corruption", 0), 0u);
}

TEST(CrashExplainer, UncaughtExceptionWithType) {
  auto p = crashed(SIGABRT, -6, std::nullopt,
                   abort_stack({native("__gnu_cxx::__verbose_terminate_handler()"),
                                native("__cxxabiv1::__terminate(void (*)())"),
                                native("std::terminate()"), native("__cxa_throw")}),
                   100);
  CrashFacts f;
  EXPECT_EQ(explain_crash(p, f)[0],
            "std::terminate was called (an uncaught C++ exception: nothing caught what was "
            "thrown); abort() raised SIGABRT");
  f.exception = CxxException{"std::out_of_range", std::string("vector::_M_range_check")};
  EXPECT_EQ(explain_crash(p, f)[0],
            "std::terminate was called after an uncaught C++ exception of type "
            "std::out_of_range (what(): \"vector::_M_range_check\"); abort() raised SIGABRT");
}

TEST(CrashExplainer, NcclWatchdogSignature) {
  auto p = crashed(
      SIGABRT, -6, std::nullopt,
      abort_stack({native("std::terminate()"), native("c10d::ProcessGroupNCCL::ncclCommWatchdog()"),
                   native("execute_native_thread_routine")}),
      100);
  auto s = explain_crash(p, CrashFacts{});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].rfind("std::terminate was called", 0), 0u);
  EXPECT_EQ(s[1].rfind("this is torch.distributed's NCCL watchdog", 0), 0u);
}

TEST(CrashExplainer, CudaGlooAndTorchErrors) {
  auto p = crashed(SIGABRT, -6, std::nullopt,
                   abort_stack({native("std::terminate()"), native("__cxa_throw"),
                                native("c10::cuda::c10_cuda_check_implementation(int, char const*, "
                                       "char const*, int, bool)"),
                                native("gloo::transport::tcp::Pair::handleReadWrite(int)")}),
                   100);
  CrashFacts f;
  f.exception = CxxException{"c10::Error", std::nullopt};
  auto s = explain_crash(p, f);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_NE(s[1].find("CUDA error path"), std::string::npos);
  EXPECT_NE(s[2].find("gloo collective failed"), std::string::npos);
  EXPECT_NE(s[3].find("PyTorch error (c10::Error)"), std::string::npos);
}

TEST(CrashExplainer, PythonExceptionAndPythonCode) {
  auto p = crashed(SIGSEGV, 1, 0x0,
                   {native("_PyErr_SetObject"), python("load", "/app/data.py", 41),
                    native("_PyEval_EvalFrameDefault")});
  auto s = explain_crash(p, CrashFacts{});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0],
            "SIGSEGV at address 0x0: a null pointer dereference in _PyErr_SetObject (libx.so)");
  EXPECT_EQ(s[1],
            "a Python exception was being raised in the crashing thread (in load (data.py:41))");
  EXPECT_EQ(
      s[2],
      "the crashing thread was running Python code; innermost Python frame: load (data.py:41)");
}

// A node without debug info: libc's memmove variant, libffi and _ctypes have no symbols. The
// fault is still placed in the innermost frame (by its address and module), not in the first
// named caller, and the ctypes call path is known by its modules.
TEST(CrashExplainer, UnnamedFramesOfCtypesWithoutDebugInfo) {
  auto unnamed = [](std::string module, std::uint64_t pc) {
    Frame f = native("??");
    f.module = std::move(module);
    f.pc = pc;
    return f;
  };
  auto p = crashed(SIGSEGV, 1, 0x0,
                   {unnamed("/lib/x86_64-linux-gnu/libc-2.31.so", 0x7f3cdda26bb3),
                    unnamed("/usr/lib/x86_64-linux-gnu/libffi.so.7.1.0", 0x7f3cdd68bd1d),
                    unnamed("/usr/lib/python3.9/lib-dynload/_ctypes.cpython-39-x86_64.so", 0x1),
                    native("_PyObject_MakeTpCall"), python("read_header", "/hs/crash.py", 23)});
  EXPECT_EQ(explain_crash(p, CrashFacts{}),
            (std::vector<std::string>{
                "SIGSEGV at address 0x0: a null pointer dereference in 0x7f3cdda26bb3 "
                "(libc-2.31.so)",
                "the native code was called from Python through ctypes, by read_header "
                "(crash.py:23)"}));
}

TEST(CrashExplainer, RuleNamesAreUnique) {
  std::set<std::string> names;
  for (const auto& r : crash_rules()) EXPECT_TRUE(names.insert(r.name).second) << r.name;
}

// A libstdc++ exception laid out in fabricated memory: header, unwind header, object, and
// the type_info chain std::out_of_range -> std::logic_error.
TEST(CxaException, DecodesTypeAndWhat) {
  BufferMemory mem;
  auto u64 = [](std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v) {
    std::memcpy(b.data() + at, &v, 8);
  };
  constexpr std::uint64_t kHeader = 0x10000, kTypes = 0x20000, kStrings = 0x30000;
  std::vector<std::uint8_t> heap(256, 0);
  u64(heap, 0, kTypes);                  // exceptionType -> out_of_range's type_info
  u64(heap, 80, 0x474e5543432b2b00ULL);  // "GNUCC++\0"
  u64(heap, 112 + 8, kStrings + 64);     // the object's message pointer
  mem.add(kHeader, heap);
  std::vector<std::uint8_t> types(64, 0);
  u64(types, 8, kStrings);            // out_of_range: name
  u64(types, 16, kTypes + 32);        // base: logic_error
  u64(types, 32 + 8, kStrings + 32);  // logic_error: name
  mem.add(kTypes, types);
  std::vector<std::uint8_t> strings(128, 0);
  std::memcpy(strings.data(), "St12out_of_range", 17);
  std::memcpy(strings.data() + 32, "St11logic_error", 16);
  std::memcpy(strings.data() + 64, "index 7 >= 3", 13);
  mem.add(kStrings, strings);
  auto ex = decode_cxa_exception(mem, kHeader);
  ASSERT_TRUE(ex);
  EXPECT_EQ(ex->type, "std::out_of_range");
  EXPECT_EQ(ex->what.value_or(""), "index 7 >= 3");
  u64(heap, 80, 0x1234);
  BufferMemory bad;
  bad.add(kHeader, heap);
  EXPECT_FALSE(decode_cxa_exception(bad, kHeader));
}

}  // namespace
}  // namespace hangscan
