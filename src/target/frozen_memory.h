// Memory written while a target is stopped: a prefaulted buffer for the copies, and a page
// cache that serves the Python walk from few reads.
//
// Why: on a virtual machine the first touch of a fresh page costs ~10 us (a trap into the
// guest kernel and often the hypervisor), and one process_vm_readv costs ~2 us whatever its
// size up to a few pages. Copying 50 thread stacks into fresh vectors and fetching a Python
// frame chain field by field therefore spent most of the pause on page faults and system
// calls, not on copying. FreezeBuffer gets its pages from the kernel in one MAP_POPULATE call
// before the target is stopped (~0.4 us a page); PageCacheMemory fetches a page at a time into
// that buffer and first looks in the stack copies already made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "target/memory_reader.h"
#include "util/huge_mapping.h"

namespace hangscan {

class FreezeBuffer {
 public:
  // Maps and populates `bytes` (rounded up to pages) now. 0, or a failed mapping, gives an
  // empty buffer: every take() then fails and callers fall back to the heap.
  explicit FreezeBuffer(std::size_t bytes);
  FreezeBuffer(const FreezeBuffer&) = delete;
  FreezeBuffer& operator=(const FreezeBuffer&) = delete;

  // `n` bytes of prefaulted memory that stay valid as long as the buffer; empty when the
  // buffer has fewer than `n` bytes left.
  std::span<std::uint8_t> take(std::size_t n);

  std::size_t capacity() const { return memory_.size(); }
  std::size_t used() const { return used_; }

 private:
  HugeMapping memory_;
  std::size_t used_ = 0;
};

class PageCacheMemory : public MemoryReader {
 public:
  static constexpr std::size_t kPageSize = 4096;

  // `buffer` (may be null) holds the fetched pages; `max_pages` bounds the memory the cache
  // holds: past it, reads go straight to `base`.
  PageCacheMemory(MemoryReader& base, FreezeBuffer* buffer, std::size_t max_pages = 4096);

  // Bytes already copied from the target at `addr` (a thread's stack): reads inside them are
  // served from there. They must outlive this reader.
  void add_copy(std::uint64_t addr, std::span<const std::uint8_t> bytes);

  std::size_t read(std::uint64_t addr, void* buf, std::size_t len) override;

  // Later reads of pages not held go to `base`. Why: the pages fetched during a freeze outlive
  // the reader they came from (capture/finish.h decodes Python code objects through them).
  void rebase(MemoryReader& base) { base_ = &base; }

  // The pages fetched so far (that had readable bytes): what a walk read, so that the same walk
  // can be served from one batch later.
  std::vector<std::uint64_t> page_indices() const;
  // Fetches these pages in one batch of reads (see MemoryReader::read_many), skipping pages
  // already held or inside a copy.
  void prefetch(std::span<const std::uint64_t> indices);

  // How many reads reached the base reader (each one system call for a live process).
  std::size_t base_reads() const { return base_reads_; }

 private:
  struct Page {
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;  // bytes readable from the start of the page (maybe 0)
  };
  struct Copy {
    std::uint64_t addr;
    std::span<const std::uint8_t> bytes;
  };
  const Page* page(std::uint64_t index);
  const Copy* covering(std::uint64_t addr, std::size_t len) const;

  MemoryReader* base_;
  FreezeBuffer* buffer_;
  std::size_t max_pages_;
  std::size_t base_reads_ = 0;
  std::vector<Copy> copies_;
  std::unordered_map<std::uint64_t, Page> pages_;
  std::vector<std::vector<std::uint8_t>> heap_pages_;  // when the buffer is used up
};

}  // namespace hangscan
