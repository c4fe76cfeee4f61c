#include "util/huge_mapping.h"

#include <sys/mman.h>

#include <utility>

namespace hangscan {

HugeMapping::HugeMapping(std::size_t bytes) {
  if (bytes == 0) return;
  const std::size_t size = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  // One huge page more than needed, so that an aligned run can be cut out of it.
  const std::size_t raw_size = size + kHugePage;
  void* raw = ::mmap(nullptr, raw_size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) ::munmap(raw, aligned - start);
  const std::uintptr_t end = aligned + size;
  if (start + raw_size > end) ::munmap(reinterpret_cast<void*>(end), start + raw_size - end);
  base_ = reinterpret_cast<std::uint8_t*>(aligned);
  size_ = size;
  ::madvise(base_, size_, MADV_HUGEPAGE);  // advice only: without THP, 4 KiB pages
}

HugeMapping::~HugeMapping() {
  if (base_ != nullptr) ::munmap(base_, size_);
}

HugeMapping::HugeMapping(HugeMapping&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), size_(std::exchange(other.size_, 0)) {}

HugeMapping& HugeMapping::operator=(HugeMapping&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) ::munmap(base_, size_);
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void HugeMapping::populate() {
  for (std::size_t off = 0; off < size_; off += 4096) base_[off] = 0;
}

}  // namespace hangscan
