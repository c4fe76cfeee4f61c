// The symbolizer's inline chains on real code: this test binary (built -O2 -g) holds a chain
// of always_inline functions three deep; the return address of a call made at its innermost
// point must come back as every level, innermost first, each caller at the line where it
// calls the next (DW_AT_call_line), and the out-of-line function last.
#include "unwind/module_symbolizer.h"

#include <link.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace hangscan {
namespace {

// The line numbers below are checked against __LINE__ where each call is made.
int g_inner_line = 0;
int g_middle_line = 0;
int g_outer_line = 0;
std::uintptr_t g_return_address = 0;

[[gnu::noinline]] void record_return_address() {
  g_return_address = reinterpret_cast<std::uintptr_t>(__builtin_return_address(0));
  asm volatile("" ::: "memory");
}

[[gnu::always_inline]] inline void chain_inner() {
  g_inner_line = __LINE__ + 1;
  record_return_address();
  asm volatile("" ::: "memory");  // keeps the call from becoming a tail call
}

[[gnu::always_inline]] inline void chain_middle() {
  g_middle_line = __LINE__ + 1;
  chain_inner();
  asm volatile("" ::: "memory");
}

[[gnu::noinline]] void chain_outer() {
  g_outer_line = __LINE__ + 1;
  chain_middle();
  asm volatile("" ::: "memory");
}

// The load bias of this executable (PIE): vaddr = address - bias.
std::uintptr_t self_bias() {
  std::uintptr_t bias = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        *static_cast<std::uintptr_t*>(data) = info->dlpi_addr;
        return 1;  // the first object is the executable
      },
      &bias);
  return bias;
}

TEST(InlineChain, EveryLevelAtItsCallSite) {
  chain_outer();
  ASSERT_NE(g_return_address, 0u);
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  OfflineModules modules;
  std::uint64_t vaddr = g_return_address - self_bias() - 1;  // a return address: pc - 1
  std::vector<Frame> frames = modules.symbolize(self, self, vaddr);
  ASSERT_EQ(frames.size(), 3u);
  auto where = [](const Frame& f) {
    return std::filesystem::path(f.file.value_or("")).filename().string() + ":" +
           std::to_string(f.line.value_or(0));
  };
  const std::string file = "inline_chain_test.cpp";
  EXPECT_EQ(frames[0].kind, FrameKind::inline_frame);
  // GCC gives internal inline functions no DW_AT_linkage_name: their DWARF name is all there
  // is (eu-stack prints the same); the out-of-line function is named after its ELF symbol.
  EXPECT_EQ(frames[0].function, "chain_inner");
  EXPECT_EQ(where(frames[0]), file + ":" + std::to_string(g_inner_line));
  EXPECT_EQ(frames[1].kind, FrameKind::inline_frame);
  EXPECT_EQ(frames[1].function, "chain_middle");
  EXPECT_EQ(where(frames[1]), file + ":" + std::to_string(g_middle_line));
  EXPECT_EQ(frames[2].kind, FrameKind::native);
  EXPECT_EQ(frames[2].function, "hangscan::(anonymous namespace)::chain_outer()");
  EXPECT_EQ(where(frames[2]), file + ":" + std::to_string(g_outer_line));
}

}  // namespace
}  // namespace hangscan
