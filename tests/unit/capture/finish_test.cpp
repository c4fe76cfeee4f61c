// finish_process() over copies made without any Target: the test process's own stack, copied
// through a known chain of functions; the same copy cut short; registers that point nowhere;
// fabricated Python frame chains; the facts an acquisition reports (death, D state, pause).
// The source is a bare ModuleSource over this process's maps, as the eBPF recorder's will be.
#include <gtest/gtest.h>

#include <ucontext.h>
#include <unistd.h>

#include <cstring>

#include <fmt/format.h>

#include "../python/fake_python.h"
#include "capture/finish.h"
#include "capture/python_capture.h"
#include "proc/proc_files.h"
#include "target/process_memory.h"

namespace hangscan {
namespace {

// This process's memory, but only inside its file mappings (code, unwind tables): what a
// sampler can still read once the sampled thread has moved on. The stack is not readable: the
// copy is all there is of it.
class ModuleMemory : public MemoryReader {
 public:
  explicit ModuleMemory(const std::vector<Mapping>& maps) : maps_(maps), live_(getpid()) {}
  std::size_t read(std::uint64_t addr, void* buf, std::size_t len) override {
    for (const auto& m : maps_) {
      if (m.is_file() && m.contains(addr) && len <= m.end - addr) return live_.read(addr, buf, len);
    }
    return 0;
  }

 private:
  const std::vector<Mapping>& maps_;
  ProcessMemory live_;
};

// This process's mappings and files, as a bare ModuleSource.
class SelfSource : public ModuleSource {
 public:
  SelfSource() : memory_(maps_) {
    auto text = read_text_file("/proc/self/maps");
    if (text) maps_ = parse_maps(*text);
  }
  int pid() const override { return getpid(); }
  bool is_live() const override { return true; }
  MemoryReader& memory() override { return memory_; }
  const std::vector<Mapping>& mappings() const override { return maps_; }
  std::optional<std::string> local_path(const Mapping& m) const override {
    if (!m.is_file()) return std::nullopt;
    return m.path;
  }

 private:
  std::vector<Mapping> maps_;
  ModuleMemory memory_;
};

// The copy of this thread taken inside hs_finish_chain_c(), called as
// test body -> hs_finish_chain_a -> hs_finish_chain_b -> hs_finish_chain_c.
struct SelfCopy {
  ThreadCopy thread;
  std::uint64_t marker_a = 0;   // a local of hs_finish_chain_a: below its return address
  std::uint64_t ra_slot_a = 0;  // where hs_finish_chain_a's return address is
  int line_a = 0;               // the line in chain_a that calls chain_b
  int line_b = 0;               // the line in chain_b that calls chain_c
};

SelfCopy* g_self = nullptr;  // where chain_c writes (the chain takes no arguments)

std::uint64_t stack_end(std::uint64_t sp) {
  auto text = read_text_file("/proc/self/maps");
  if (!text) return 0;
  for (const auto& m : parse_maps(*text)) {
    if (m.contains(sp)) return m.end;
  }
  return 0;
}

// A word-by-word copy that ASan does not check: the live stack holds ASan's redzones between
// locals, and reading them is the point here (a sampler copies the raw stack, redzones and all).
// volatile keeps the compiler from turning the loop into an (intercepted) memcpy.
__attribute__((no_sanitize("address"), noinline)) void copy_raw(std::uint8_t* out,
                                                                std::uint64_t from,
                                                                std::size_t len) {
  const volatile std::uint8_t* in = reinterpret_cast<const volatile std::uint8_t*>(from);
  for (std::size_t i = 0; i < len; ++i) out[i] = in[i];
}

extern "C" __attribute__((noinline, noclone)) void hs_finish_chain_c() {
  ucontext_t uc;
  getcontext(&uc);
  const greg_t* g = uc.uc_mcontext.gregs;
  Registers r;
  r.raw.rip = static_cast<unsigned long long>(g[REG_RIP]);
  r.raw.rsp = static_cast<unsigned long long>(g[REG_RSP]);
  r.raw.rbp = static_cast<unsigned long long>(g[REG_RBP]);
  r.raw.rbx = static_cast<unsigned long long>(g[REG_RBX]);
  r.raw.r12 = static_cast<unsigned long long>(g[REG_R12]);
  r.raw.r13 = static_cast<unsigned long long>(g[REG_R13]);
  r.raw.r14 = static_cast<unsigned long long>(g[REG_R14]);
  r.raw.r15 = static_cast<unsigned long long>(g[REG_R15]);
  std::uint64_t sp = r.raw.rsp;
  std::uint64_t end = stack_end(sp);
  std::vector<std::uint8_t> bytes(end - sp);
  copy_raw(bytes.data(), sp, bytes.size());
  g_self->thread.tid = static_cast<int>(gettid());
  g_self->thread.regs = r;
  g_self->thread.stack.start = sp;
  g_self->thread.stack.bytes = std::move(bytes);
  asm volatile("" ::: "memory");
}

extern "C" __attribute__((noinline, noclone)) void hs_finish_chain_b() {
  g_self->line_b = __LINE__ + 1;
  hs_finish_chain_c();
  asm volatile("" ::: "memory");  // no tail call: chain_b keeps its frame
}

extern "C" __attribute__((noinline, noclone)) void hs_finish_chain_a() {
  volatile char marker = 0;
  g_self->marker_a = reinterpret_cast<std::uint64_t>(&marker);
  // With a frame pointer (which taking the frame address gives chain_a), the return address
  // is just above the saved one.
  g_self->ra_slot_a = reinterpret_cast<std::uint64_t>(__builtin_frame_address(0)) + 8;
  g_self->line_a = __LINE__ + 1;
  hs_finish_chain_b();
  asm volatile("" ::: "memory");
  (void)marker;
}

__attribute__((noinline)) SelfCopy copy_self() {
  SelfCopy out;
  g_self = &out;
  hs_finish_chain_a();
  g_self = nullptr;
  return out;
}

ProcessCopy one_thread(ThreadCopy t) {
  ProcessCopy copy;
  copy.pid = getpid();
  copy.what = "pid " + std::to_string(copy.pid);
  copy.process.pid = copy.pid;
  copy.threads.push_back(std::move(t));
  return copy;
}

CaptureOptions native_options() {
  CaptureOptions o;
  o.python = false;
  return o;
}

std::vector<std::string> names(const ThreadSnapshot& t, std::size_t n) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n && i < t.frames.size(); ++i) out.push_back(t.frames[i].function);
  return out;
}

class FinishSelf : public ::testing::TestWithParam<UnwinderKind> {};

// The whole stack, copied while it ran, unwinds to the chain that made it, with the call
// lines, down to _start, though the functions returned long before finish_process() ran.
TEST_P(FinishSelf, ACopyOfThisThreadUnwindsToItsChain) {
  SelfCopy self = copy_self();
  ASSERT_FALSE(self.thread.stack.bytes.empty());
  CaptureOptions options = native_options();
  options.unwinder = GetParam();
  SelfSource source;
  SymbolCache symbols;
  int tid = self.thread.tid;
  ProcessSnapshot snap =
      finish_process(one_thread(std::move(self.thread)), source, options, symbols);
  EXPECT_TRUE(snap.diagnostics.empty()) << snap.diagnostics.front().message;
  ASSERT_EQ(snap.threads.size(), 1u);
  const ThreadSnapshot& t = snap.threads[0];
  EXPECT_EQ(t.tid, tid);
  EXPECT_TRUE(t.is_main);
  ASSERT_GE(t.frames.size(), 5u);
  EXPECT_EQ(names(t, 4),
            (std::vector<std::string>{"hs_finish_chain_c", "hs_finish_chain_b", "hs_finish_chain_a",
                                      "hangscan::(anonymous namespace)::copy_self()"}));
  EXPECT_EQ(t.frames[1].line, self.line_b);
  EXPECT_EQ(t.frames[2].line, self.line_a);
  EXPECT_EQ(t.frames[1].file.value_or("").substr(t.frames[1].file.value_or("").rfind('/') + 1),
            "finish_test.cpp");
  EXPECT_EQ(t.frames.back().function, "_start");
  EXPECT_FALSE(t.incomplete);
  EXPECT_TRUE(t.notes.empty()) << t.notes.front();
}

// The same copy cut just above chain_a's locals: chain_a's return address is outside it and
// there is no memory to read it from, so the stack ends at chain_a and says so.
TEST_P(FinishSelf, ACopyCutShortIsFlaggedIncomplete) {
  SelfCopy self = copy_self();
  ASSERT_GT(self.marker_a, self.thread.stack.start);
  self.thread.stack.bytes.resize(self.marker_a - self.thread.stack.start);
  CaptureOptions options = native_options();
  options.unwinder = GetParam();
  SelfSource source;
  SymbolCache symbols;
  ProcessSnapshot snap =
      finish_process(one_thread(std::move(self.thread)), source, options, symbols);
  ASSERT_EQ(snap.threads.size(), 1u);
  const ThreadSnapshot& t = snap.threads[0];
  EXPECT_EQ(names(t, 10), (std::vector<std::string>{"hs_finish_chain_c", "hs_finish_chain_b",
                                                    "hs_finish_chain_a"}));
  EXPECT_TRUE(t.incomplete);
  std::string why = GetParam() == UnwinderKind::libdw
                        ? fmt::format("cannot read the stack at 0x{:x}", self.ra_slot_a)
                        : "libunwind: step failed (-8)";
  EXPECT_EQ(t.notes,
            std::vector<std::string>{
                "stack incomplete: unwinding stopped after hs_finish_chain_a (" + why + ")"});
}

// Two samples of one thread (as the eBPF recorder takes them) are two stacks, in order: the
// whole one, then the one cut short.
TEST_P(FinishSelf, SamplesOfOneThreadStayApart) {
  SelfCopy whole = copy_self();
  SelfCopy cut = copy_self();
  cut.thread.stack.bytes.resize(cut.marker_a - cut.thread.stack.start);
  CaptureOptions options = native_options();
  options.unwinder = GetParam();
  SelfSource source;
  SymbolCache symbols;
  ProcessCopy copy = one_thread(std::move(whole.thread));
  copy.threads.push_back(std::move(cut.thread));
  ProcessSnapshot snap = finish_process(std::move(copy), source, options, symbols);
  ASSERT_EQ(snap.threads.size(), 2u);
  EXPECT_EQ(snap.threads[0].tid, snap.threads[1].tid);
  EXPECT_FALSE(snap.threads[0].incomplete);
  EXPECT_EQ(snap.threads[0].frames.back().function, "_start");
  EXPECT_TRUE(snap.threads[1].incomplete);
  EXPECT_EQ(
      names(snap.threads[1], 10),
      (std::vector<std::string>{"hs_finish_chain_c", "hs_finish_chain_b", "hs_finish_chain_a"}));
}

INSTANTIATE_TEST_SUITE_P(BothUnwinders, FinishSelf,
                         ::testing::Values(UnwinderKind::libdw, UnwinderKind::libunwind),
                         [](const auto& p) {
                           return p.param == UnwinderKind::libdw ? "libdw" : "libunwind";
                         });

// Registers that point at no mapping, with no stack: a thread with a note, not a crash, and
// no frames made up.
TEST(Finish, GarbageRegistersGiveANoteNotACrash) {
  ThreadCopy t;
  t.tid = 31337;
  Registers r;
  r.raw.rip = 0x10;
  r.raw.rsp = 0x20;
  t.regs = r;
  SelfSource source;
  SymbolCache symbols;
  ProcessSnapshot snap;
  ASSERT_NO_THROW(snap =
                      finish_process(one_thread(std::move(t)), source, native_options(), symbols));
  ASSERT_EQ(snap.threads.size(), 1u);
  const ThreadSnapshot& th = snap.threads[0];
  EXPECT_EQ(th.tid, 31337);
  EXPECT_FALSE(th.is_main);
  ASSERT_EQ(th.frames.size(), 1u);
  EXPECT_EQ(th.frames[0].function, "??");
  EXPECT_EQ(th.notes, std::vector<std::string>{"unwind stopped: No DWARF information found"});
}

// What the acquisition found out travels as facts: a death while stopped, a thread in D
// state, the registers that could not be read, the pause and its phases (--verbose).
TEST(Finish, AcquisitionFactsBecomeDiagnosticsAndNotes) {
  ProcessCopy copy;
  copy.pid = 4242;
  copy.what = "pid 4242";
  copy.process.pid = 4242;
  copy.process.state = 'S';
  ThreadCopy main_thread;
  main_thread.tid = 4242;
  main_thread.error = "registers unreadable: No such process";
  ThreadCopy stuck;
  stuck.tid = 4243;
  stuck.uninterruptible = true;
  copy.threads = {stuck, main_thread};
  copy.death = "was killed by SIGKILL";
  copy.pause = PauseTimes{900, 300, 100, 200, 8192, 3};
  std::vector<std::string> log;
  CaptureOptions options = native_options();
  options.log = &log;
  SelfSource source;
  SymbolCache symbols;
  ProcessSnapshot snap = finish_process(std::move(copy), source, options, symbols);
  EXPECT_EQ(snap.state, 'X');
  EXPECT_EQ(snap.pause_us, 900);
  ASSERT_EQ(snap.diagnostics.size(), 2u);
  EXPECT_EQ(snap.diagnostics[0].severity, Diagnostic::Severity::error);
  EXPECT_EQ(snap.diagnostics[0].message,
            "pid 4242 was killed by SIGKILL while it was being captured: its stacks may be "
            "incomplete");
  EXPECT_EQ(snap.diagnostics[1].severity, Diagnostic::Severity::warning);
  EXPECT_EQ(snap.diagnostics[1].message,
            "thread 4243 in uninterruptible sleep (D state) could not be stopped: its user stack "
            "is not shown; the other threads were captured");
  ASSERT_EQ(snap.threads.size(), 2u);
  EXPECT_EQ(snap.threads[0].tid, 4242);  // the main thread first
  EXPECT_TRUE(snap.threads[0].is_main);
  EXPECT_EQ(snap.threads[0].notes,
            std::vector<std::string>{"registers unreadable: No such process"});
  EXPECT_EQ(snap.threads[1].tid, 4243);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0],
            "pid 4242: paused 900 us: 2 threads stopped and registers read in 300 us, 8 KiB of "
            "stacks copied in 100 us, Python frames walked in 200 us (3 reads), resumed in 300 us");
}

// Fabricated CPython 3.11 and 3.10 frame chains: each Python thread lands on its native
// thread (3.11 by native id, 3.10 by pthread_t == the copy's fs_base) with its frames.
TEST(Finish, FabricatedPythonFramesAreDecodedOntoTheirThreads) {
  for (int minor : {10, 11}) {
    SCOPED_TRACE(minor);
    auto layout = python::builtin_layout(3, minor);
    ASSERT_TRUE(layout.has_value());
    python::testing::FakePython py(*layout);
    std::uint64_t chain = py.chain({
        {"worker", "/src/app.py", 18, 21, false, {}},
        {"<module>", "/src/main.py", 1, 5, true, {}},
    });
    py.set_gil_holder(py.thread(chain, 4243, 0x7f0000001000));
    auto mem = py.memory();

    class FakeSource : public ModuleSource {
     public:
      explicit FakeSource(MemoryReader& m) : m_(m) {}
      int pid() const override { return 4242; }
      bool is_live() const override { return false; }
      MemoryReader& memory() override { return m_; }
      const std::vector<Mapping>& mappings() const override { return maps_; }
      std::optional<std::string> local_path(const Mapping&) const override { return std::nullopt; }

     private:
      MemoryReader& m_;
      std::vector<Mapping> maps_;
    } source(*mem);

    auto pc = std::make_shared<PythonCopy>();
    pc->reader = std::make_unique<python::PythonReader>(py.located());
    pc->raw = pc->reader->walk(*mem, false);
    pc->walked = true;
    ProcessCopy copy;
    copy.pid = 4242;
    copy.process.pid = 4242;
    ThreadCopy main_thread;
    main_thread.tid = 4242;
    ThreadCopy worker;
    worker.tid = 4243;
    Registers r;
    r.raw.fs_base = 0x7f0000001000;
    worker.regs = r;
    copy.threads = {main_thread, worker};
    copy.python = pc;
    CaptureOptions options;
    options.native = false;
    SymbolCache symbols;
    ProcessSnapshot snap = finish_process(std::move(copy), source, options, symbols);
    EXPECT_TRUE(snap.diagnostics.empty()) << snap.diagnostics.front().message;
    ASSERT_TRUE(snap.python.has_value());
    EXPECT_EQ(snap.python->version, "3." + std::to_string(minor) + ".0");
    ASSERT_EQ(snap.threads.size(), 2u);
    EXPECT_TRUE(snap.threads[0].frames.empty());
    EXPECT_EQ(snap.threads[0].gil, false);
    const ThreadSnapshot& t = snap.threads[1];
    EXPECT_EQ(t.tid, 4243);
    EXPECT_EQ(t.gil, true);
    ASSERT_EQ(t.frames.size(), 2u);
    EXPECT_EQ(t.frames[0].kind, FrameKind::python);
    EXPECT_EQ(t.frames[0].function, "worker");
    EXPECT_EQ(t.frames[0].file, "/src/app.py");
    EXPECT_EQ(t.frames[0].line, 21);
    EXPECT_EQ(t.frames[1].function, "<module>");
    EXPECT_EQ(t.frames[1].file, "/src/main.py");
    EXPECT_EQ(t.frames[1].line, 5);
  }
}

}  // namespace
}  // namespace hangscan
