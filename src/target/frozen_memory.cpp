#include "target/frozen_memory.h"

#include <algorithm>
#include <cstring>

namespace hangscan {

FreezeBuffer::FreezeBuffer(std::size_t bytes) : memory_(bytes) {
  // Whole huge pages where the kernel gives them (THP "madvise" or "always"): the walk then
  // runs on one TLB entry instead of one per page, which on a VM (nested page tables) is
  // most of the cost of reading a page's worth of copied frames for the first time.
  // Every page is faulted in now, not during the freeze.
  memory_.populate();
}

std::span<std::uint8_t> FreezeBuffer::take(std::size_t n) {
  if (!memory_ || n > memory_.size() - used_) return {};
  std::span<std::uint8_t> out(memory_.data() + used_, n);
  used_ += (n + 15) & ~std::size_t{15};
  used_ = std::min(used_, memory_.size());
  return out;
}

PageCacheMemory::PageCacheMemory(MemoryReader& base, FreezeBuffer* buffer, std::size_t max_pages)
    : base_(&base), buffer_(buffer), max_pages_(max_pages) {}

void PageCacheMemory::add_copy(std::uint64_t addr, std::span<const std::uint8_t> bytes) {
  if (!bytes.empty()) copies_.push_back(Copy{addr, bytes});
}

const PageCacheMemory::Copy* PageCacheMemory::covering(std::uint64_t addr, std::size_t len) const {
  for (const auto& c : copies_) {
    if (addr >= c.addr && len <= c.bytes.size() && addr - c.addr <= c.bytes.size() - len) return &c;
  }
  return nullptr;
}

const PageCacheMemory::Page* PageCacheMemory::page(std::uint64_t index) {
  if (auto it = pages_.find(index); it != pages_.end()) return &it->second;
  if (pages_.size() >= max_pages_) return nullptr;
  std::uint8_t* data = nullptr;
  if (buffer_ != nullptr) {
    auto span = buffer_->take(kPageSize);
    if (!span.empty()) data = span.data();
  }
  if (data == nullptr) {
    heap_pages_.emplace_back(kPageSize);
    data = heap_pages_.back().data();
  }
  ++base_reads_;
  std::size_t got = base_->read(index * kPageSize, data, kPageSize);
  return &pages_.emplace(index, Page{data, got}).first->second;
}

std::vector<std::uint64_t> PageCacheMemory::page_indices() const {
  std::vector<std::uint64_t> out;
  out.reserve(pages_.size());
  for (const auto& [index, page] : pages_) {
    if (page.size > 0) out.push_back(index);
  }
  return out;
}

void PageCacheMemory::prefetch(std::span<const std::uint64_t> indices) {
  std::vector<ReadOp> ops;
  std::vector<std::uint64_t> wanted;
  for (std::uint64_t index : indices) {
    if (pages_.count(index) != 0 || pages_.size() + ops.size() >= max_pages_) continue;
    if (covering(index * kPageSize, kPageSize) != nullptr) continue;  // inside a stack copy
    std::uint8_t* data = nullptr;
    if (buffer_ != nullptr) {
      auto span = buffer_->take(kPageSize);
      if (!span.empty()) data = span.data();
    }
    if (data == nullptr) break;  // the buffer is used up: the walk fetches the rest itself
    ops.push_back(ReadOp{index * kPageSize, data, kPageSize, 0});
    wanted.push_back(index);
  }
  if (ops.empty()) return;
  ++base_reads_;
  base_->read_many(ops);
  for (std::size_t i = 0; i < ops.size(); ++i)
    pages_.emplace(wanted[i], Page{ops[i].buf, ops[i].got});
}

std::size_t PageCacheMemory::read(std::uint64_t addr, void* buf, std::size_t len) {
  auto* out = static_cast<std::uint8_t*>(buf);
  if (len == 0) return 0;
  if (const Copy* c = covering(addr, len)) {
    std::memcpy(out, c->bytes.data() + (addr - c->addr), len);
    return len;
  }
  std::size_t done = 0;
  while (done < len) {
    std::uint64_t a = addr + done;
    if (a < addr) break;  // wrapped past the top of the address space
    std::uint64_t index = a / kPageSize;
    std::size_t off = static_cast<std::size_t>(a % kPageSize);
    std::size_t want = std::min(len - done, kPageSize - off);
    const Page* p = page(index);
    if (p == nullptr) {
      // The cache is full: read the rest directly.
      ++base_reads_;
      return done + base_->read(a, out + done, len - done);
    }
    if (off >= p->size) break;
    std::size_t n = std::min(want, p->size - off);
    std::memcpy(out + done, p->data + off, n);
    done += n;
    if (n < want) break;
  }
  return done;
}

}  // namespace hangscan
