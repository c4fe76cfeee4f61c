// find_symbols() must name every address exactly as dwfl_module_addrinfo() does: it replaces
// it for the stacks of a capture, and names must not depend on which path answered. Compared
// on real libraries of this machine (libc with its debug symbols, python3.11, libstdc++, and
// libtorch_cpu's 35,000 dynamic symbols when torch is installed), at symbol starts, middles,
// ends, and the gaps between symbols.
#include "unwind/symbol_batch.h"
#include "unwind/symbol_ranges.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace hangscan {
namespace {

namespace fs = std::filesystem;

class OfflineModule {
 public:
  explicit OfflineModule(const std::string& path) {
    ::unsetenv("DEBUGINFOD_URLS");  // local debug files only
    callbacks_.find_elf = dwfl_build_id_find_elf;
    callbacks_.find_debuginfo = dwfl_standard_find_debuginfo;
    callbacks_.section_address = dwfl_offline_section_address;
    callbacks_.debuginfo_path = &debuginfo_path_;
    dwfl_ = dwfl_begin(&callbacks_);
    dwfl_report_begin(dwfl_);
    mod_ = dwfl_report_offline(dwfl_, path.c_str(), path.c_str(), -1);
    dwfl_report_end(dwfl_, nullptr, nullptr);
  }
  ~OfflineModule() { dwfl_end(dwfl_); }
  OfflineModule(const OfflineModule&) = delete;
  OfflineModule& operator=(const OfflineModule&) = delete;
  Dwfl_Module* mod() const { return mod_; }

 private:
  Dwfl_Callbacks callbacks_{};
  char* debuginfo_path_ = nullptr;
  Dwfl* dwfl_ = nullptr;
  Dwfl_Module* mod_ = nullptr;
};

// Addresses around every `stride`-th symbol: its start, middle, last byte, one past its end
// and one below its start.
std::vector<std::uint64_t> probe_addresses(Dwfl_Module* mod, std::size_t wanted) {
  std::vector<std::uint64_t> out;
  const int n = dwfl_module_getsymtab(mod);
  if (n <= 1) return out;
  const int stride = std::max(1, static_cast<int>((n * 5) / static_cast<int>(wanted)));
  for (int i = 1; i < n; i += stride) {
    GElf_Sym sym;
    GElf_Addr value = 0;
    GElf_Word shndx = 0;
    const char* name = dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, nullptr, nullptr);
    if (name == nullptr || value == 0) continue;
    for (std::uint64_t a :
         {value, value + sym.st_size / 2, value + (sym.st_size ? sym.st_size - 1 : 0),
          value + sym.st_size, value - 1}) {
      out.push_back(a);
    }
  }
  return out;
}

void expect_same_as_libdw(const std::string& path, std::size_t wanted) {
  if (!fs::exists(path)) GTEST_SKIP() << path << " is not installed";
  OfflineModule m(path);
  ASSERT_NE(m.mod(), nullptr) << path;
  auto addrs = probe_addresses(m.mod(), wanted);
  ASSERT_GT(addrs.size(), 100u) << path;
  auto hits = find_symbols(m.mod(), addrs);
  ASSERT_EQ(hits.size(), addrs.size());
  std::size_t named = 0;
  for (std::size_t i = 0; i < addrs.size(); ++i) {
    GElf_Off off = 0;
    GElf_Sym sym;
    const char* want =
        dwfl_module_addrinfo(m.mod(), addrs[i], &off, &sym, nullptr, nullptr, nullptr);
    const char* got = hits[i].name;
    if (want == nullptr) {
      EXPECT_EQ(got, nullptr) << path << " at 0x" << std::hex << addrs[i] << ": " << got;
      continue;
    }
    ++named;
    ASSERT_NE(got, nullptr) << path << " at 0x" << std::hex << addrs[i] << ": libdw says " << want;
    EXPECT_STREQ(got, want) << path << " at 0x" << std::hex << addrs[i];
    EXPECT_EQ(addrs[i] - hits[i].value, off)
        << path << " at 0x" << std::hex << addrs[i] << " " << want;
  }
  EXPECT_GT(named, addrs.size() / 2) << path;
}

TEST(SymbolBatch, LibcWithItsDebugSymbols) {
  expect_same_as_libdw(fs::canonical("/lib/x86_64-linux-gnu/libc.so.6").string(), 3000);
}

TEST(SymbolBatch, Python311) { expect_same_as_libdw("/usr/bin/python3.11", 1000); }

TEST(SymbolBatch, Libstdcxx) {
  expect_same_as_libdw(fs::canonical("/usr/lib/x86_64-linux-gnu/libstdc++.so.6").string(), 2000);
}

TEST(SymbolBatch, LibtorchCpuDynamicSymbols) {
  // Only its .dynsym (Debian strips it): 35,000 symbols, the table that made the scan slow.
  const std::string path = "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0";
  expect_same_as_libdw(path, 400);
}

TEST(SymbolBatch, EdgeAddresses) {
  OfflineModule m(fs::canonical("/lib/x86_64-linux-gnu/libc.so.6").string());
  ASSERT_NE(m.mod(), nullptr);
  EXPECT_TRUE(find_symbols(m.mod(), {}).empty());
  // 0 (where absolute symbols sit), 1, and the far end of the address space: whatever libdw
  // says, including nothing.
  std::vector<std::uint64_t> edges = {0, 1, ~std::uint64_t{0}};
  auto hits = find_symbols(m.mod(), edges);
  ASSERT_EQ(hits.size(), edges.size());
  for (std::size_t i = 0; i < edges.size(); ++i) {
    GElf_Off off = 0;
    GElf_Sym sym;
    const char* want =
        dwfl_module_addrinfo(m.mod(), edges[i], &off, &sym, nullptr, nullptr, nullptr);
    if (want == nullptr) {
      EXPECT_EQ(hits[i].name, nullptr) << i;
    } else {
      ASSERT_NE(hits[i].name, nullptr) << i;
      EXPECT_STREQ(hits[i].name, want) << i;
      EXPECT_EQ(edges[i] - hits[i].value, off) << i;
    }
  }
}

// SymbolRanges answers exactly as find_symbols: probe addresses (symbol starts, middles, last
// bytes, one past the ends, one below the starts), their neighbours (+1, +2, +5, +13: inside
// functions, in gaps, on other boundaries), and size-less symbols (labels, absolute symbols)
// one byte in and exactly on them (where the answer inside a stretch must not be taken).
void expect_ranges_same_as_batch(const std::string& path, std::size_t wanted) {
  if (!fs::exists(path)) GTEST_SKIP() << path << " is not installed";
  OfflineModule m(path);
  ASSERT_NE(m.mod(), nullptr) << path;
  auto first = probe_addresses(m.mod(), wanted);
  ASSERT_GT(first.size(), 100u) << path;
  std::vector<std::uint64_t> second;
  for (std::uint64_t a : first) {
    for (std::uint64_t d : {1, 2, 5, 13}) second.push_back(a + d);
  }
  std::vector<std::uint64_t> third = second;
  third.insert(third.end(), first.begin(), first.end());
  // Size-less symbols (labels, absolute symbols): one byte in first, then exactly on them,
  // where an answer found just inside must not be taken.
  std::vector<std::uint64_t> inside_labels;
  std::vector<std::uint64_t> on_labels;
  const int n = dwfl_module_getsymtab(m.mod());
  for (int i = 1; i < n; ++i) {
    GElf_Sym sym;
    GElf_Addr value = 0;
    const char* name = dwfl_module_getsym_info(m.mod(), i, &sym, &value, nullptr, nullptr, nullptr);
    if (name == nullptr || sym.st_size != 0 || !usable_symbol(name, sym)) continue;
    inside_labels.push_back(value + 1);
    on_labels.push_back(value);
  }
  SymbolRanges ranges(m.mod());
  for (const auto* batch : {&first, &second, &third, &inside_labels, &on_labels}) {
    auto got = ranges.find(*batch);
    auto want = find_symbols(m.mod(), *batch);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      const std::uint64_t a = (*batch)[i];
      EXPECT_EQ(got[i].name, want[i].name) << path << " at 0x" << std::hex << a;
      EXPECT_EQ(got[i].value, want[i].value) << path << " at 0x" << std::hex << a;
      EXPECT_EQ(got[i].label, want[i].label) << path << " at 0x" << std::hex << a;
    }
  }
  // Every boundary and every stretch's inside went through its one pass.
  EXPECT_GT(ranges.scanned(), first.size() / 5) << path;
}

TEST(SymbolRanges, LibcWithItsDebugSymbols) {
  expect_ranges_same_as_batch(fs::canonical("/lib/x86_64-linux-gnu/libc.so.6").string(), 3000);
}

TEST(SymbolRanges, Libstdcxx) {
  expect_ranges_same_as_batch(fs::canonical("/usr/lib/x86_64-linux-gnu/libstdc++.so.6").string(),
                              2000);
}

TEST(SymbolRanges, LibtorchCpuDynamicSymbols) {
  expect_ranges_same_as_batch("/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0", 400);
}

}  // namespace
}  // namespace hangscan
