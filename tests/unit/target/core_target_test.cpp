// CoreTarget on fabricated cores: threads, crash marks, mappings, the environment from the
// initial stack, memory falling back to mapped files, and build-id checks of modules.
#include "target/core_target.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <csignal>
#include <fstream>

#include "core_builder.h"
#include "target/core_modules.h"
#include "target/initial_stack.h"

namespace hangscan {
namespace {

using testing::FakeCore;
using testing::put;
using testing::put_bytes;

constexpr std::uint64_t kStackLo = 0x7ffd00000000;
constexpr std::uint64_t kStackHi = kStackLo + 0x2000;
constexpr const char* kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";

std::string self_exe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::vector<std::uint8_t> first_page(const std::string& path) {
  std::vector<std::uint8_t> out(4096);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
  return out;
}

// The kernel's layout at exec, top of the stack: strings, then (below) auxv, envp, argv, argc.
struct StackImage {
  std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(kStackHi - kStackLo, 0);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> auxv;
  std::uint64_t sp = 0;

  StackImage(const std::vector<std::string>& argv, const std::vector<std::string>& envp) {
    std::uint64_t str = kStackHi - 16;
    auto push_string = [&](const std::string& s) {
      str -= s.size() + 1;
      put_bytes(bytes, str - kStackLo, s.c_str(), s.size() + 1);
      return str;
    };
    std::uint64_t execfn = push_string("/usr/bin/prog");
    std::vector<std::uint64_t> env_ptrs, arg_ptrs;
    for (auto it = envp.rbegin(); it != envp.rend(); ++it)
      env_ptrs.insert(env_ptrs.begin(), push_string(*it));
    for (auto it = argv.rbegin(); it != argv.rend(); ++it)
      arg_ptrs.insert(arg_ptrs.begin(), push_string(*it));
    auxv = {{AT_PAGESZ, 4096}, {AT_ENTRY, 0x401000}, {AT_EXECFN, execfn}, {AT_RANDOM, str - 16}};
    std::size_t words = 1 + arg_ptrs.size() + 1 + env_ptrs.size() + 1 + 2 * (auxv.size() + 1);
    sp = ((str - 64) & ~std::uint64_t{15}) - words * 8;
    std::uint64_t a = sp;
    auto word = [&](std::uint64_t v) {
      put(bytes, a - kStackLo, v);
      a += 8;
    };
    word(arg_ptrs.size());
    for (auto p : arg_ptrs) word(p);
    word(0);
    for (auto p : env_ptrs) word(p);
    word(0);
    for (auto [t, v] : auxv) {
      word(t);
      word(v);
    }
    word(0);
    word(0);
  }
};

struct Fixture {
  FakeCore core;
  StackImage stack{{"python3", "train.py", "--epochs=3"}, {"HOME=/root", "RANK=5", "WORLD_SIZE=8"}};
};

Fixture make_fixture(const std::string& exe_path, const std::vector<std::uint8_t>& exe_header) {
  Fixture f;
  user_regs_struct crashed{};
  crashed.rip = 0x401010;
  crashed.rsp = f.stack.sp - 0x100;
  crashed.orig_rax = ~0ULL;
  user_regs_struct main_regs = crashed;
  main_regs.orig_rax = 202;  // futex
  f.core.add_note(NT_PRPSINFO, FakeCore::prpsinfo(100, 1, "prog", "python3 train.py --e", 'D'));
  f.core.add_note(NT_PRSTATUS, FakeCore::prstatus(102, SIGABRT, crashed));
  f.core.add_note(NT_PRSTATUS, FakeCore::prstatus(100, SIGABRT, main_regs));
  f.core.add_note(0x53494749, FakeCore::siginfo(SIGABRT, -6 /* SI_TKILL */, 100));
  f.core.add_note(0x46494c45, FakeCore::file_note({{0x400000, 0x401000, 0, exe_path},
                                                   {0x401000, 0x403000, 1, exe_path}}));
  f.core.add_note(NT_AUXV, FakeCore::auxv(f.stack.auxv));
  f.core.segments.push_back({0x400000, 0x1000, exe_header, PF_R});
  f.core.segments.push_back({0x401000, 0x2000, {}, PF_R | PF_X});  // text: not dumped
  f.core.segments.push_back({kStackLo, kStackHi - kStackLo, f.stack.bytes, PF_R | PF_W});
  return f;
}

std::unique_ptr<Target> open_fixture(const Fixture& f, const CoreOpenOptions& opts = {}) {
  auto core = CoreFile::parse_buffer(f.core.build(), "core.prog.100");
  EXPECT_TRUE(core.ok()) << (core.ok() ? "" : core.error().what());
  if (!core.ok()) return nullptr;
  return make_core_target(std::move(core).value(), opts);
}

TEST(CoreTarget, ThreadsCrashMarkAndSyscall) {
  std::string exe = self_exe();
  auto t = open_fixture(make_fixture(exe, first_page(exe)));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->pid(), 100);
  EXPECT_FALSE(t->is_live());
  auto fr = t->freeze(Deadline::never());
  ASSERT_TRUE(fr.ok());
  ASSERT_EQ(fr.value()->threads().size(), 2u);
  EXPECT_EQ(fr.value()->threads()[0].tid, 102);
  EXPECT_EQ(fr.value()->threads()[0].regs->pc(), 0x401010u);
  EXPECT_EQ(fr.value()->release(), 0);

  ThreadSnapshot crashed;
  crashed.tid = 102;
  t->describe_thread(crashed);
  EXPECT_TRUE(crashed.crashed);
  EXPECT_FALSE(crashed.is_main);
  EXPECT_EQ(crashed.state, 'R');
  ThreadSnapshot main_thread;
  main_thread.tid = 100;
  t->describe_thread(main_thread);
  EXPECT_FALSE(main_thread.crashed);
  EXPECT_TRUE(main_thread.is_main);
  EXPECT_EQ(main_thread.name, "prog");
  EXPECT_EQ(main_thread.state, 'S');
  EXPECT_EQ(main_thread.syscall.value_or(""), "futex");
}

TEST(CoreTarget, ProcessDescriptionFromNotesAndStack) {
  std::string exe = self_exe();
  auto t = open_fixture(make_fixture(exe, first_page(exe)));
  ASSERT_TRUE(t);
  ProcessSnapshot p;
  t->describe_process(p);
  EXPECT_EQ(p.pid, 100);
  EXPECT_EQ(p.ppid, 1);
  EXPECT_EQ(p.state, 'S');  // the main thread's, not NT_PRPSINFO's 'D'
  EXPECT_EQ(p.exe, exe);
  EXPECT_EQ(p.cmdline, (std::vector<std::string>{"python3", "train.py", "--epochs=3"}));
  ASSERT_TRUE(p.core);
  EXPECT_EQ(p.core->path, "core.prog.100");
  EXPECT_EQ(p.core->crashed_tid.value_or(0), 102);
  ASSERT_TRUE(p.core->signal);
  EXPECT_EQ(p.core->signal->name, "SIGABRT");
  EXPECT_EQ(p.core->signal->sender_pid.value_or(0), 100);
  EXPECT_FALSE(p.core->signal->address);
  EXPECT_TRUE(p.diagnostics.empty()) << p.diagnostics[0].message;
}

TEST(CoreTarget, EnvironmentFromInitialStack) {
  std::string exe = self_exe();
  auto t = open_fixture(make_fixture(exe, first_page(exe)));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->environment(), (std::vector<std::string>{"HOME=/root", "RANK=5", "WORLD_SIZE=8"}));
}

TEST(CoreTarget, MappingsLabelledAndResolved) {
  std::string exe = self_exe();
  auto t = open_fixture(make_fixture(exe, first_page(exe)));
  ASSERT_TRUE(t);
  const auto& maps = t->mappings();
  ASSERT_EQ(maps.size(), 3u);
  EXPECT_EQ(maps[0].path, exe);
  EXPECT_EQ(maps[0].perms, "r--p");
  EXPECT_EQ(maps[1].offset, 0x1000u);
  EXPECT_EQ(maps[1].perms, "r-xp");
  EXPECT_EQ(maps[2].path, "[stack]");
  EXPECT_EQ(t->local_path(maps[0]).value_or(""), exe);
  EXPECT_FALSE(t->local_path(maps[2]));
}

TEST(CoreTarget, NotDumpedPagesComeFromTheFile) {
  std::string exe = self_exe();
  auto t = open_fixture(make_fixture(exe, first_page(exe)));
  ASSERT_TRUE(t);
  std::vector<std::uint8_t> want(64);
  {
    std::ifstream f(exe, std::ios::binary);
    f.seekg(0x1000 + 0x20);
    f.read(reinterpret_cast<char*>(want.data()), 64);
  }
  std::vector<std::uint8_t> got(64);
  EXPECT_EQ(t->memory().read(0x401020, got.data(), got.size()), 64u);
  EXPECT_EQ(got, want);
  // A read spanning the dumped header page and the not-dumped text continues in the file
  // (the header page in the core is the file's first page, so the bytes equal the file's).
  std::vector<std::uint8_t> span(32), span_want(32);
  {
    std::ifstream f(exe, std::ios::binary);
    f.seekg(0xff0);
    f.read(reinterpret_cast<char*>(span_want.data()), 32);
  }
  EXPECT_EQ(t->memory().read(0x400ff0, span.data(), span.size()), 32u);
  EXPECT_EQ(span, span_want);
  // Past the end of the mapping nothing is invented.
  EXPECT_EQ(t->memory().read(0x402ff0, span.data(), span.size()), 16u);
}

TEST(CoreTarget, BuildIdMismatchIsAWarning) {
  // The core's header page is libc's, the file at the path is this test binary.
  std::string exe = self_exe();
  auto t = open_fixture(make_fixture(exe, first_page(kLibc)));
  ASSERT_TRUE(t);
  ProcessSnapshot p;
  t->describe_process(p);
  ASSERT_EQ(p.diagnostics.size(), 1u);
  EXPECT_NE(p.diagnostics[0].message.find("build-id mismatch"), std::string::npos);
  EXPECT_NE(p.diagnostics[0].message.find(exe), std::string::npos);
  EXPECT_NE(p.diagnostics[0].hint.find("--sysroot"), std::string::npos);
}

TEST(CoreTarget, LibPathFindsTheMatchingFile) {
  auto f = make_fixture("/crashed/machine/lib/libc.so.6", first_page(kLibc));
  auto t = open_fixture(f, CoreOpenOptions{"", "", {"/nonexistent", "/usr/lib/x86_64-linux-gnu"}});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->local_path(t->mappings()[0]).value_or(""), kLibc);
  ProcessSnapshot p;
  t->describe_process(p);
  EXPECT_TRUE(p.diagnostics.empty()) << p.diagnostics[0].message;
}

TEST(CoreTarget, MissingExecutableSaysExe) {
  auto f = make_fixture("/crashed/machine/bin/prog", first_page(kLibc));
  auto t = open_fixture(f);
  ASSERT_TRUE(t);
  ProcessSnapshot p;
  t->describe_process(p);
  ASSERT_EQ(p.diagnostics.size(), 1u);
  EXPECT_NE(p.diagnostics[0].message.find("executable /crashed/machine/bin/prog not found"),
            std::string::npos);
  EXPECT_NE(p.diagnostics[0].hint.find("--exe"), std::string::npos);
  // --exe replaces it (and is checked by build-id like any module).
  auto t2 = open_fixture(f, CoreOpenOptions{kLibc, "", {}});
  EXPECT_EQ(t2->local_path(t2->mappings()[0]).value_or(""), kLibc);
}

TEST(CoreTarget, GcoreHasNoCrash) {
  std::string exe = self_exe();
  auto f = make_fixture(exe, first_page(exe));
  // gdb's gcore: pr_cursig 0, NT_SIGINFO holds the SIGSTOP of its attach.
  for (auto& n : f.core.notes) {
    if (n.type == NT_PRSTATUS) put<std::int16_t>(n.desc, 12, 0);
    if (n.type == 0x53494749) n.desc = FakeCore::siginfo(SIGSTOP, 0x80, 0);
  }
  auto t = open_fixture(f);
  ASSERT_TRUE(t);
  ProcessSnapshot p;
  t->describe_process(p);
  ASSERT_TRUE(p.core);
  EXPECT_FALSE(p.core->signal);
  EXPECT_FALSE(p.core->crashed_tid);
}

TEST(InitialStack, NotFoundWhenAuxvDiffers) {
  StackImage s({"a"}, {"X=1"});
  BufferMemory mem;
  mem.add(kStackLo, s.bytes);
  auto auxv = s.auxv;
  EXPECT_TRUE(read_initial_stack(mem, kStackLo, kStackHi, auxv));
  auxv[0].second = 8192;
  EXPECT_FALSE(read_initial_stack(mem, kStackLo, kStackHi, auxv));
  EXPECT_FALSE(read_initial_stack(mem, kStackLo, kStackHi, {}));
}

TEST(BuildId, FileAndMemoryAgree) {
  auto from_file = build_id_of_file(kLibc);
  ASSERT_TRUE(from_file);
  EXPECT_EQ(from_file->size(), 40u);  // SHA-1
  BufferMemory mem;
  mem.add(0x7f0000000000, first_page(kLibc));
  EXPECT_EQ(build_id_in_memory(mem, 0x7f0000000000).value_or(""), *from_file);
  EXPECT_FALSE(build_id_of_file("/etc/passwd"));
}

}  // namespace
}  // namespace hangscan
