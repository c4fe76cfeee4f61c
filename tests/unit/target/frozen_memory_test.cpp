// The memory a freeze writes: the prefaulted buffer, the page cache that serves the Python
// walk, and batched reads of a live process (this test process itself).
#include "target/frozen_memory.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "target/process_memory.h"

namespace hangscan {
namespace {

constexpr std::size_t kPage = PageCacheMemory::kPageSize;

// BufferMemory that counts what reaches it.
class CountingMemory : public MemoryReader {
 public:
  BufferMemory inner;
  int reads = 0;
  int batches = 0;
  std::size_t read(std::uint64_t addr, void* buf, std::size_t len) override {
    ++reads;
    return inner.read(addr, buf, len);
  }
  void read_many(std::span<ReadOp> ops) override {
    ++batches;
    for (auto& op : ops) op.got = inner.read(op.addr, op.buf, op.len);
  }
};

std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed + i * 7);
  return v;
}

TEST(FreezeBuffer, HandsOutDisjointAlignedSpansUntilFull) {
  FreezeBuffer buf(3 * kPage);
  ASSERT_GE(buf.capacity(), 3 * kPage);
  auto a = buf.take(10);
  auto b = buf.take(kPage);
  ASSERT_EQ(a.size(), 10u);
  ASSERT_EQ(b.size(), kPage);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 16, 0u);
  EXPECT_GE(b.data(), a.data() + a.size());
  std::memset(b.data(), 0xab, b.size());          // writable
  EXPECT_TRUE(buf.take(buf.capacity()).empty());  // more than is left
  FreezeBuffer none(0);
  EXPECT_TRUE(none.take(1).empty());
}

TEST(PageCacheMemory, ReadsAcrossPagesAndStopsAtAHole) {
  CountingMemory base;
  const std::uint64_t at = 0x10000;
  auto bytes = pattern(2 * kPage, 3);
  base.inner.add(at, bytes);  // two readable pages, then nothing
  FreezeBuffer buf(8 * kPage);
  PageCacheMemory mem(base, &buf);

  std::vector<std::uint8_t> out(100);
  ASSERT_EQ(mem.read(at + kPage - 50, out.data(), 100), 100u);  // straddles two pages
  EXPECT_EQ(0, std::memcmp(out.data(), bytes.data() + kPage - 50, 100));
  EXPECT_EQ(mem.base_reads(), 2u);
  ASSERT_EQ(mem.read(at + 8, out.data(), 16), 16u);  // served from the cache
  EXPECT_EQ(mem.base_reads(), 2u);
  EXPECT_EQ(mem.read(at + 2 * kPage - 10, out.data(), 100), 10u);  // short at the hole
  EXPECT_EQ(mem.read(at + 5 * kPage, out.data(), 8), 0u);
  EXPECT_EQ(mem.read(~std::uint64_t{0} - 3, out.data(), 8), 0u);  // no wrap-around
}

TEST(PageCacheMemory, ServesStackCopiesWithoutReading) {
  CountingMemory base;
  auto stack = pattern(3000, 9);
  PageCacheMemory mem(base, nullptr);
  mem.add_copy(0x7000'0000'0100, stack);
  std::uint64_t v = 0;
  ASSERT_TRUE(mem.read_obj(0x7000'0000'0100 + 80, v));
  std::uint64_t want = 0;
  std::memcpy(&want, stack.data() + 80, 8);
  EXPECT_EQ(v, want);
  EXPECT_EQ(base.reads, 0);
  // Past the copy's end the reader goes to the target (here: nothing there).
  EXPECT_FALSE(mem.read_obj(0x7000'0000'0100 + 2998, v));
}

TEST(PageCacheMemory, PrefetchIsOneBatchAndServesTheWalk) {
  CountingMemory base;
  const std::uint64_t at = 0x400000;
  auto bytes = pattern(4 * kPage, 1);
  base.inner.add(at, bytes);
  FreezeBuffer buf(16 * kPage);
  PageCacheMemory probe(base, nullptr);
  std::uint32_t x = 0;
  for (std::uint64_t off : {std::uint64_t{16}, kPage + 4, 3 * kPage + 100})
    probe.read_obj(at + off, x);
  auto pages = probe.page_indices();
  ASSERT_EQ(pages.size(), 3u);

  base.reads = 0;
  PageCacheMemory mem(base, &buf);
  auto copy = pattern(kPage, 5);
  mem.add_copy(at + 2 * kPage, copy);  // a page inside a copy is not fetched again
  pages.push_back((at + 2 * kPage) / kPage);
  mem.prefetch(pages);
  EXPECT_EQ(base.batches, 1);
  EXPECT_EQ(base.reads, 0);
  for (std::uint64_t off : {std::uint64_t{16}, kPage + 4, 3 * kPage + 100}) {
    ASSERT_TRUE(mem.read_obj(at + off, x));
    std::uint32_t want = 0;
    std::memcpy(&want, bytes.data() + off, 4);
    EXPECT_EQ(x, want);
  }
  EXPECT_EQ(base.reads, 0);
  EXPECT_EQ(mem.base_reads(), 1u);
}

TEST(PageCacheMemory, PastItsCapReadsGoStraightThrough) {
  CountingMemory base;
  auto bytes = pattern(4 * kPage, 2);
  base.inner.add(0x1000, bytes);
  PageCacheMemory mem(base, nullptr, 1);
  std::vector<std::uint8_t> out(3 * kPage);
  ASSERT_EQ(mem.read(0x1000, out.data(), out.size()), out.size());
  EXPECT_EQ(0, std::memcmp(out.data(), bytes.data(), out.size()));
  EXPECT_EQ(base.reads, 2);  // one page cached, the rest in one direct read
}

TEST(ProcessMemory, ReadManyIsExactAroundUnmappedPages) {
  // Three pages of this very process, the middle one unmapped.
  auto* p = static_cast<std::uint8_t*>(
      ::mmap(nullptr, 3 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  for (std::size_t i = 0; i < 3 * kPage; ++i) p[i] = static_cast<std::uint8_t>(i * 13);
  ASSERT_EQ(::munmap(p + kPage, kPage), 0);
  auto addr = [&](std::size_t off) { return reinterpret_cast<std::uint64_t>(p + off); };

  ProcessMemory mem(::getpid());
  std::vector<std::vector<std::uint8_t>> bufs(4, std::vector<std::uint8_t>(200));
  std::vector<MemoryReader::ReadOp> ops = {
      {addr(10), bufs[0].data(), 100, 0},
      {addr(kPage - 50), bufs[1].data(), 200, 0},     // runs into the hole: 50 bytes
      {addr(kPage + 10), bufs[2].data(), 100, 0},     // inside the hole
      {addr(2 * kPage + 5), bufs[3].data(), 200, 0},  // after it: read in full
  };
  mem.read_many(ops);
  EXPECT_EQ(ops[0].got, 100u);
  EXPECT_EQ(ops[1].got, 50u);
  EXPECT_EQ(ops[2].got, 0u);
  EXPECT_EQ(ops[3].got, 200u);
  EXPECT_EQ(0, std::memcmp(bufs[0].data(), p + 10, 100));
  EXPECT_EQ(0, std::memcmp(bufs[1].data(), p + kPage - 50, 50));
  EXPECT_EQ(0, std::memcmp(bufs[3].data(), p + 2 * kPage + 5, 200));
  ::munmap(p, kPage);
  ::munmap(p + 2 * kPage, kPage);
}

TEST(ProcessMemory, ReadManyCoversMoreThanOneSystemCallsWorth) {
  std::vector<std::uint8_t> src = pattern(3000, 4);
  std::vector<std::uint8_t> dst(3000);
  std::vector<MemoryReader::ReadOp> ops;
  for (std::size_t i = 0; i < 3000; ++i)  // more than IOV_MAX (1024) reads of one byte
    ops.push_back({reinterpret_cast<std::uint64_t>(src.data() + i), dst.data() + i, 1, 0});
  ProcessMemory mem(::getpid());
  mem.read_many(ops);
  EXPECT_EQ(dst, src);
  EXPECT_TRUE(std::all_of(ops.begin(), ops.end(), [](const auto& op) { return op.got == 1; }));
}

}  // namespace
}  // namespace hangscan
