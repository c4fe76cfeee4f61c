// plan_core(): what a size-bounded core keeps and leaves out, on fabricated memory maps.
#include <gtest/gtest.h>

#include "corewrite/core_plan.h"
#include "proc/proc_facts.h"
#include "util/parse_number.h"

namespace hangscan {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

Mapping map(std::uint64_t start, std::uint64_t end, std::string perms, std::string path = {},
            std::uint64_t offset = 0) {
  Mapping m;
  m.start = start;
  m.end = end;
  m.perms = std::move(perms);
  m.path = std::move(path);
  m.offset = offset;
  return m;
}

const CorePiece* piece_at(const CorePlan& p, std::uint64_t addr) {
  for (const auto& c : p.pieces) {
    if (addr >= c.start && addr < c.end) return &c;
  }
  return nullptr;
}

// A Python-like process: the exe image, its data and .bss, a 2 GiB array, a small arena, a
// thread stack, the main stack and the vDSO.
PlanInput python_like() {
  PlanInput in;
  in.mappings = {
      map(0x400000, 0x401000, "r--p", "/usr/bin/python3.11"),
      map(0x401000, 0x700000, "r-xp", "/usr/bin/python3.11", 0x1000),
      map(0x900000, 0x940000, "rw-p", "/usr/bin/python3.11", 0x500000),
      map(0x940000, 0x980000, "rw-p"),  // .bss
      map(0x1000000, 0x1400000, "rw-p", "[heap]"),
      map(0x7f0000000000, 0x7f0080000000, "rw-p"),  // 2 GiB of arrays
      map(0x7f1000000000, 0x7f1000100000, "rw-p"),  // an arena
      map(0x7f2000000000, 0x7f2000001000, "---p"),  // guard
      map(0x7f2000001000, 0x7f2000801000, "rw-p"),  // thread stack
      map(0x7ffd00000000, 0x7ffd00021000, "rw-p", "[stack]"),
      map(0x7ffd10000000, 0x7ffd10002000, "r-xp", "[vdso]"),
  };
  in.facts.resize(in.mappings.size());
  for (auto& f : in.facts) f.known = true;
  in.facts[0].elf_magic = true;
  in.facts[2].anon_pages = true;
  in.stack_pointers = {0x7f2000800000, 0x7ffd00020000};
  in.keep_ranges = {{0x7f1000000100, 0x7f1000000200}};
  in.vdso = 0x7ffd10000000;
  in.max_size = 256 * kMiB;
  return in;
}

TEST(CorePlan, LeavesOutTheArraysKeepsWhatStacksNeed) {
  CorePlan p = plan_core(python_like());
  EXPECT_LE(p.dump_bytes, 256 * kMiB);
  const CorePiece* arrays = piece_at(p, 0x7f0000000000);
  ASSERT_NE(arrays, nullptr);
  EXPECT_EQ(arrays->dump, 0u);
  EXPECT_EQ(arrays->omitted, "over --max-size 256M");
  EXPECT_EQ(piece_at(p, 0x900000)->dump, 0x40000u);                 // module data
  EXPECT_EQ(piece_at(p, 0x940000)->keep, KeepReason::module_data);  // .bss
  EXPECT_EQ(piece_at(p, 0x7f1000000000)->keep, KeepReason::python);
  EXPECT_EQ(piece_at(p, 0x400000)->dump, 4096u);  // ELF header page
  EXPECT_EQ(piece_at(p, 0x401000)->dump, 0u);     // code: on disk
  EXPECT_TRUE(piece_at(p, 0x401000)->omitted.empty());
  EXPECT_EQ(piece_at(p, 0x7ffd10000000)->keep, KeepReason::vdso);
  EXPECT_EQ(piece_at(p, 0x1000000)->dump, 4 * kMiB);  // heap fits the budget
  // The thread stack: from the stack pointer (less the red zone) up; below it left out.
  const CorePiece* below = piece_at(p, 0x7f2000001000);
  const CorePiece* top = piece_at(p, 0x7f2000800000);
  ASSERT_NE(below, top);
  EXPECT_EQ(below->dump, 0u);
  EXPECT_EQ(top->start, 0x7f20007ff000u);
  EXPECT_EQ(top->end, 0x7f2000801000u);
  EXPECT_EQ(top->dump, top->size());
}

TEST(CorePlan, HugeMappingKeepsOnlyBlocksAroundWhatWasRead) {
  PlanInput in = python_like();
  in.keep_ranges.push_back({0x7f0000300010, 0x7f0000300020});  // a frame inside the arrays
  CorePlan p = plan_core(in);
  const CorePiece* kept = piece_at(p, 0x7f0000300010);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->start, 0x7f0000300000u);
  EXPECT_EQ(kept->size(), kMiB);
  EXPECT_TRUE(kept->must);
  EXPECT_EQ(piece_at(p, 0x7f0000500000)->dump, 0u);  // the big rest is left out first
  EXPECT_FALSE(piece_at(p, 0x7f0000000000)->must);   // the 3 MiB before it may stay
  EXPECT_LE(p.dump_bytes, 256 * kMiB);
}

TEST(CorePlan, SmallestCandidatesStayWhenBudgetAllows) {
  PlanInput in = python_like();
  in.max_size = 4ull << 40;
  CorePlan p = plan_core(in);
  EXPECT_EQ(piece_at(p, 0x7f0000000000)->dump, 2048 * kMiB);
  EXPECT_TRUE(p.warnings.empty());
}

TEST(CorePlan, HonoursDontDumpAndCoredumpFilter) {
  PlanInput in = python_like();
  in.facts[4].dontdump = true;
  in.coredump_filter = 0x31;  // no anonymous shared, no file-backed: private anon stays
  in.mappings.push_back(map(0x7ffe00000000, 0x7ffe00100000, "rw-s", "/dev/zero (deleted)"));
  in.mappings.back().deleted = true;
  in.mappings.back().path = "/dev/zero";
  in.facts.push_back(MappingFacts{.known = true});
  CorePlan p = plan_core(in);
  EXPECT_EQ(piece_at(p, 0x1000000)->omitted, "VM_DONTDUMP (madvise)");
  EXPECT_EQ(piece_at(p, 0x7ffe00000000)->omitted, "coredump_filter 0x31");
  in.coredump_filter = 0x20;  // no ELF headers either
  p = plan_core(in);
  EXPECT_EQ(piece_at(p, 0x400000)->dump, 0u);
  EXPECT_EQ(piece_at(p, 0x900000)->omitted, "coredump_filter 0x20");
  EXPECT_GT(piece_at(p, 0x7f2000800000)->dump, 0u);  // stacks are never dropped
}

TEST(CorePlan, StacksOverTheCapStayAndWarn) {
  PlanInput in = python_like();
  in.max_size = 1 * kMiB;
  CorePlan p = plan_core(in);
  EXPECT_GT(piece_at(p, 0x7f2000800000)->dump, 0u);
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("more than --max-size 1M"), std::string::npos);
}

TEST(ProcFacts, Smaps) {
  auto f = parse_smaps(
      "00400000-00401000 r--p 00000000 08:01 12 /usr/bin/x\n"
      "Size:                  4 kB\nAnonymous:             0 kB\nVmFlags: rd mr mw me dw sd\n"
      "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
      "Anonymous:             4 kB\nVmFlags: rd wr mr mw me dd ac sd\n"
      "7f1000000000-7f1000001000 rw-s 00000000 00:05 3 /dev/nvidia0\nVmFlags: rd wr io pf\n");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_FALSE(f[0x400000].anon_pages);
  EXPECT_TRUE(f[0x7f0000000000].dontdump);
  EXPECT_TRUE(f[0x7f0000000000].anon_pages);
  EXPECT_TRUE(f[0x7f1000000000].io);
}

TEST(ProcFacts, SizesLimitsFilter) {
  EXPECT_EQ(parse_size("256M"), 256 * kMiB);
  EXPECT_EQ(parse_size("1.5G"), 1536 * kMiB);
  EXPECT_EQ(parse_size("512k"), 512u * 1024);
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("2GiB"), 2048 * kMiB);
  EXPECT_FALSE(parse_size("lots"));
  EXPECT_FALSE(parse_size("-1M"));
  EXPECT_EQ(parse_coredump_filter("00000033\n"), 0x33u);
  EXPECT_EQ(parse_core_limit(
                "Max core file size        0                    unlimited            bytes\n"),
            0u);
  EXPECT_EQ(parse_core_limit(
                "Max core file size        unlimited            unlimited            bytes\n"),
            UINT64_MAX);
  EXPECT_EQ(human_size(2ull << 30), "2G");
  EXPECT_EQ(omitted_line(0x1000, 0x3000, "x"), "omitted 1000-3000 8192 x");
}

}  // namespace
}  // namespace hangscan
