// CoreFile on fabricated cores: every note kind, memory reads, and every bad-input path.
#include "target/core_file.h"

#include <gtest/gtest.h>

#include <csignal>

#include "core_builder.h"

namespace hangscan {
namespace {

using testing::FakeCore;

FakeCore two_thread_core() {
  FakeCore c;
  c.add_note(NT_PRPSINFO, FakeCore::prpsinfo(100, 1, "worker", "python3 train.py --lr 0.1 "));
  c.add_note(NT_PRSTATUS,
             FakeCore::prstatus(101, SIGSEGV, testing::make_regs(0x401000, 0x7ffd0000f000)));
  c.add_note(NT_PRSTATUS,
             FakeCore::prstatus(100, SIGSEGV, testing::make_regs(0x402000, 0x7ffd0000e000, 202)));
  c.add_note(0x53494749, FakeCore::siginfo(SIGSEGV, 1 /* SEGV_MAPERR */, 0));
  c.add_note(0x46494c45, FakeCore::file_note({{0x400000, 0x402000, 0, "/usr/bin/prog"},
                                              {0x402000, 0x404000, 2, "/usr/bin/prog"}}));
  c.add_note(NT_AUXV, FakeCore::auxv({{AT_PAGESZ, 4096}, {AT_ENTRY, 0x401000}}));
  c.add_note(2 /* NT_FPREGSET */, std::vector<std::uint8_t>(512, 0));
  c.add_note(0x202 /* NT_X86_XSTATE */, std::vector<std::uint8_t>(64, 0), "LINUX");
  std::vector<std::uint8_t> text(4096, 0x90);
  text[0] = 0xcc;
  c.segments.push_back({0x400000, 0x2000, text, PF_R | PF_X});  // second page not dumped
  std::vector<std::uint8_t> stack(0x1000);
  for (std::size_t i = 0; i < stack.size(); ++i) stack[i] = static_cast<std::uint8_t>(i);
  c.segments.push_back({0x7ffd0000e000, 0x1000, stack, PF_R | PF_W});
  return c;
}

std::unique_ptr<CoreFile> parse_ok(const FakeCore& c) {
  auto r = CoreFile::parse_buffer(c.build(), "core.test");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().what());
  return r.ok() ? std::move(r).value() : nullptr;
}

Error parse_err(const std::vector<std::uint8_t>& bytes) {
  auto r = CoreFile::parse_buffer(bytes, "core.bad");
  EXPECT_FALSE(r.ok());
  return r.ok() ? Error() : r.error();
}

TEST(CoreFile, ThreadsInNoteOrderWithRegisters) {
  auto core = parse_ok(two_thread_core());
  ASSERT_TRUE(core);
  ASSERT_EQ(core->threads().size(), 2u);
  EXPECT_EQ(core->threads()[0].tid, 101);
  EXPECT_EQ(core->threads()[0].cursig, SIGSEGV);
  EXPECT_EQ(core->threads()[0].regs.pc(), 0x401000u);
  EXPECT_EQ(core->threads()[0].regs.sp(), 0x7ffd0000f000u);
  EXPECT_EQ(core->threads()[0].regs.fs_base(), 0x7f0000001000u);
  EXPECT_EQ(core->threads()[1].tid, 100);
  EXPECT_EQ(core->threads()[1].regs.raw.orig_rax, 202u);
  EXPECT_TRUE(core->warnings().empty());
}

TEST(CoreFile, PsinfoSiginfoAuxv) {
  auto core = parse_ok(two_thread_core());
  ASSERT_TRUE(core);
  ASSERT_TRUE(core->psinfo());
  EXPECT_EQ(core->psinfo()->pid, 100);
  EXPECT_EQ(core->psinfo()->ppid, 1);
  EXPECT_EQ(core->psinfo()->fname, "worker");
  EXPECT_EQ(core->psinfo()->psargs, "python3 train.py --lr 0.1");
  ASSERT_TRUE(core->siginfo());
  EXPECT_EQ(core->siginfo()->signo, SIGSEGV);
  EXPECT_EQ(core->siginfo()->code, 1);
  ASSERT_TRUE(core->siginfo()->address);
  EXPECT_EQ(*core->siginfo()->address, 0u);
  EXPECT_FALSE(core->siginfo()->sender_pid);
  EXPECT_EQ(core->auxv_value(AT_ENTRY).value_or(0), 0x401000u);
  EXPECT_FALSE(core->auxv_value(AT_EXECFN));
}

TEST(CoreFile, SentSignalHasSenderNotAddress) {
  FakeCore c = two_thread_core();
  c.notes[3] = {"CORE", 0x53494749, FakeCore::siginfo(SIGSEGV, 0 /* SI_USER */, 4242)};
  auto core = parse_ok(c);
  ASSERT_TRUE(core && core->siginfo());
  EXPECT_FALSE(core->siginfo()->address);
  EXPECT_EQ(core->siginfo()->sender_pid.value_or(0), 4242);
}

TEST(CoreFile, FileNoteOffsetsInBytes) {
  auto core = parse_ok(two_thread_core());
  ASSERT_TRUE(core);
  ASSERT_EQ(core->files().size(), 2u);
  EXPECT_EQ(core->files()[1].path, "/usr/bin/prog");
  EXPECT_EQ(core->files()[1].start, 0x402000u);
  EXPECT_EQ(core->files()[1].file_offset, 2u * 4096);
  EXPECT_EQ(core->page_size(), 4096u);
}

TEST(CoreFile, ReadsDumpedMemoryAndStopsAtOmittedPart) {
  auto core = parse_ok(two_thread_core());
  ASSERT_TRUE(core);
  std::uint8_t b[4];
  EXPECT_EQ(core->read(0x400000, b, 2), 2u);
  EXPECT_EQ(b[0], 0xcc);
  EXPECT_EQ(b[1], 0x90);
  EXPECT_EQ(core->read(0x400ffe, b, 4), 2u);  // the second page was not dumped
  EXPECT_TRUE(core->in_omitted_part(0x401000));
  EXPECT_FALSE(core->in_omitted_part(0x400000));
  EXPECT_EQ(core->read(0x7ffd0000e010, b, 4), 4u);
  EXPECT_EQ(b[0], 0x10);
  EXPECT_EQ(core->read(0x500000, b, 4), 0u);
  EXPECT_EQ(core->read(0xfffffffffffffffe, b, 4), 0u);
}

TEST(CoreFile, NotElf) {
  std::vector<std::uint8_t> text(200, 'x');
  Error e = parse_err(text);
  EXPECT_EQ(e.code, Errc::bad_data);
  EXPECT_NE(e.what().find("not an ELF file"), std::string::npos);
  EXPECT_FALSE(e.hint.empty());
}

TEST(CoreFile, ElfButNotACore) {
  FakeCore c = two_thread_core();
  c.elf_type = ET_DYN;
  Error e = parse_err(c.build());
  EXPECT_NE(e.what().find("not a core"), std::string::npos);
  EXPECT_NE(e.hint.find("--exe"), std::string::npos);
}

TEST(CoreFile, OtherArchitecture) {
  FakeCore c = two_thread_core();
  c.machine = EM_AARCH64;
  Error e = parse_err(c.build());
  EXPECT_EQ(e.code, Errc::unsupported);
  EXPECT_NE(e.what().find("aarch64"), std::string::npos);
}

TEST(CoreFile, ThirtyTwoBit) {
  FakeCore c = two_thread_core();
  c.elf_class = ELFCLASS32;
  EXPECT_EQ(parse_err(c.build()).code, Errc::unsupported);
}

TEST(CoreFile, TruncatedEverywhereNeverCrashes) {
  auto bytes = two_thread_core().build();
  for (std::size_t n = 0; n < bytes.size(); n += 7) {
    std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(n));
    auto r = CoreFile::parse_buffer(cut, "core.cut");
    if (r.ok()) {
      // Only the segment data may be missing; the notes were complete.
      EXPECT_TRUE(r.value()->truncated()) << n;
      EXPECT_FALSE(r.value()->warnings().empty());
      std::uint8_t b[64];
      (void)r.value()->read(0x7ffd0000e000, b, sizeof(b));
    } else {
      EXPECT_FALSE(r.error().hint.empty()) << n;
    }
  }
}

TEST(CoreFile, TruncatedSegmentDataReadsWhatIsThere) {
  auto bytes = two_thread_core().build();
  bytes.resize(bytes.size() - 0x800);  // half of the stack page is gone
  auto r = CoreFile::parse_buffer(bytes, "core.cut");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value()->truncated());
  std::uint8_t b[0x1000];
  EXPECT_EQ(r.value()->read(0x7ffd0000e000, b, sizeof(b)), 0x800u);
}

TEST(CoreFile, AbsurdNoteSizeIsAWarning) {
  FakeCore c = two_thread_core();
  auto bytes = c.build();
  // The last note's descsz becomes 4 GiB - 1.
  std::size_t notes_at = sizeof(Elf64_Ehdr) + 3 * sizeof(Elf64_Phdr);
  std::size_t at = notes_at;
  for (std::size_t i = 0; i + 1 < c.notes.size(); ++i) {
    std::uint32_t namesz, descsz;
    std::memcpy(&namesz, &bytes[at], 4);
    std::memcpy(&descsz, &bytes[at + 4], 4);
    at += 12 + ((namesz + 3) & ~3u) + ((descsz + 3) & ~3u);
  }
  testing::put<std::uint32_t>(bytes, at + 4, 0xffffffffu);
  auto r = CoreFile::parse_buffer(bytes, "core.bad");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value()->threads().size(), 2u);
  ASSERT_EQ(r.value()->warnings().size(), 1u);
  EXPECT_NE(r.value()->warnings()[0].find("corrupt note"), std::string::npos);
}

TEST(CoreFile, CorruptFirstNoteLeavesNoThreads) {
  FakeCore c = two_thread_core();
  auto bytes = c.build();
  std::size_t notes_at = sizeof(Elf64_Ehdr) + 3 * sizeof(Elf64_Phdr);
  testing::put<std::uint32_t>(bytes, notes_at, 0x7fffffffu);  // namesz
  Error e = parse_err(bytes);
  EXPECT_NE(e.what().find("no thread"), std::string::npos);
}

TEST(CoreFile, AbsurdFileCountIgnored) {
  FakeCore c = two_thread_core();
  auto note = FakeCore::file_note({{0x400000, 0x402000, 0, "/usr/bin/prog"}});
  testing::put<std::uint64_t>(note, 0, 1ULL << 60);
  c.notes[4] = {"CORE", 0x46494c45, note};
  auto core = parse_ok(c);
  ASSERT_TRUE(core);
  EXPECT_TRUE(core->files().empty());
  ASSERT_EQ(core->warnings().size(), 1u);
  EXPECT_NE(core->warnings()[0].find("NT_FILE"), std::string::npos);
}

TEST(CoreFile, FileNamesCutShort) {
  FakeCore c = two_thread_core();
  auto note = FakeCore::file_note(
      {{0x400000, 0x402000, 0, "/usr/bin/prog"}, {0x402000, 0x404000, 2, "/usr/lib/libx.so"}});
  note.resize(note.size() - 3);  // the last name loses its end and its NUL
  c.notes[4] = {"CORE", 0x46494c45, note};
  auto core = parse_ok(c);
  ASSERT_TRUE(core);
  ASSERT_EQ(core->files().size(), 1u);
  EXPECT_EQ(core->files()[0].path, "/usr/bin/prog");
}

TEST(CoreFile, ShortPrstatusSkipped) {
  FakeCore c = two_thread_core();
  c.notes[1].desc.resize(100);
  auto core = parse_ok(c);
  ASSERT_TRUE(core);
  EXPECT_EQ(core->threads().size(), 1u);
  EXPECT_EQ(core->threads()[0].tid, 100);
  EXPECT_EQ(core->warnings().size(), 1u);
}

TEST(CoreFile, NoPrstatusIsAnError) {
  FakeCore c;
  c.add_note(NT_PRPSINFO, FakeCore::prpsinfo(5, 1, "x", "x"));
  Error e = parse_err(c.build());
  EXPECT_EQ(e.code, Errc::bad_data);
}

TEST(CoreFile, SegmentWithWrappingAddressSkipped) {
  FakeCore c = two_thread_core();
  c.segments.push_back({0xfffffffffffff000, 0x2000, {}, PF_R});
  auto core = parse_ok(c);
  ASSERT_TRUE(core);
  EXPECT_EQ(core->segments().size(), 2u);
  EXPECT_EQ(core->warnings().size(), 1u);
}

// hangscan gcore writes its own note after the memory: a file cut there keeps every thread.
// A cut inside the notes keeps the notes before the cut and says the rest is missing.
TEST(CoreFile, NotesCutShortKeepTheNotesBefore) {
  FakeCore c = two_thread_core();
  auto bytes = c.build();
  std::size_t at = sizeof(Elf64_Ehdr) + 3 * sizeof(Elf64_Phdr);
  for (int i = 0; i < 2; ++i) {  // past prpsinfo and the first prstatus
    std::uint32_t namesz, descsz;
    std::memcpy(&namesz, &bytes[at], 4);
    std::memcpy(&descsz, &bytes[at + 4], 4);
    at += 12 + ((namesz + 3) & ~3u) + ((descsz + 3) & ~3u);
  }
  bytes.resize(at + 100);  // inside the second prstatus
  auto r = CoreFile::parse_buffer(bytes, "core.cut");
  ASSERT_TRUE(r.ok()) << r.error().what();
  const CoreFile& core = *r.value();
  ASSERT_EQ(core.threads().size(), 1u);
  EXPECT_EQ(core.threads()[0].tid, 101);
  ASSERT_TRUE(core.psinfo());
  EXPECT_TRUE(core.truncated());
  bool said = false;
  for (const auto& w : core.warnings()) {
    said |= w.find("core truncated inside its notes") != std::string::npos;
    EXPECT_EQ(w.find("corrupt note"), std::string::npos) << w;
  }
  EXPECT_TRUE(said);
  // Cut inside the first thread's note: nothing to show, the old error.
  bytes.resize(sizeof(Elf64_Ehdr) + 3 * sizeof(Elf64_Phdr) + 200);
  EXPECT_NE(parse_err(bytes).what().find("truncated before the end of its notes"),
            std::string::npos);
}

TEST(CoreFile, SegmentLargerThanAnAddressSpaceIsCorrupt) {
  FakeCore c = two_thread_core();
  c.segments.push_back({0x10000000, std::uint64_t{1} << 63, {}, PF_R});
  Error e = parse_err(c.build());
  EXPECT_EQ(e.code, Errc::bad_data);
  EXPECT_NE(e.what().find("corrupt core: program header 3 claims 9223372036854775808 bytes"),
            std::string::npos)
      << e.what();
  // Across the end of user space too; the vsyscall page in the kernel half is a real mapping.
  FakeCore across = two_thread_core();
  across.segments.push_back({0x7ffffffff000, 0x2000, {}, PF_R});
  EXPECT_EQ(parse_err(across.build()).code, Errc::bad_data);
  FakeCore vsyscall = two_thread_core();
  vsyscall.segments.push_back({0xffffffffff600000, 0x1000, {}, PF_R | PF_X});
  auto core = parse_ok(vsyscall);
  ASSERT_TRUE(core);
  EXPECT_TRUE(core->warnings().empty());
}

TEST(CoreFile, ThreadByTid) {
  FakeCore c = two_thread_core();
  c.add_note(NT_PRSTATUS, FakeCore::prstatus(101, 0, testing::make_regs(0x403000, 0x7ffd0000e800)));
  auto core = parse_ok(c);
  ASSERT_TRUE(core);
  ASSERT_NE(core->thread(100), nullptr);
  EXPECT_EQ(core->thread(100)->regs.raw.rip, 0x402000u);
  ASSERT_NE(core->thread(101), nullptr);
  EXPECT_EQ(core->thread(101)->regs.raw.rip, 0x403000u);  // the last note of a repeated tid
  EXPECT_EQ(core->thread(102), nullptr);
}

TEST(CoreFile, OpenMissingFileAndEmptyFile) {
  auto r = CoreFile::open("/nonexistent/core.1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::not_found);
  char tmpl[] = "/tmp/hs-empty-core-XXXXXX";
  int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  auto e = CoreFile::open(tmpl);
  unlink(tmpl);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().what().find("empty"), std::string::npos);
  EXPECT_NE(e.error().hint.find("ulimit -c"), std::string::npos);
}

TEST(CoreFile, SignalNames) {
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signal_name(SIGABRT), "SIGABRT");
  EXPECT_EQ(signal_name(SIGRTMIN + 2), "SIGRTMIN+2");
  EXPECT_EQ(signal_name(200), "SIG200");
}

}  // namespace
}  // namespace hangscan
