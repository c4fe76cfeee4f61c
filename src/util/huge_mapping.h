// HugeMapping: anonymous memory on whole, aligned transparent huge pages.
//
// Why: in a VM each 4 KiB page fault costs ~10-25 us, so tens of MB written for the first time
// (inflated DWARF, cached core blocks, the freeze buffer) cost tens of ms in faults alone. A
// 2 MiB-aligned mapping whose size is a multiple of 2 MiB, advised MADV_HUGEPAGE, faults once
// per 2 MiB where the kernel allows THP ("always" or "madvise"); an unaligned one keeps its
// ragged head and tail on 4 KiB pages. Where THP is off this is a plain anonymous mapping.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hangscan {

class HugeMapping {
 public:
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;

  HugeMapping() = default;
  // Maps at least `bytes` (rounded up to whole huge pages), read-write, zero-filled on first
  // touch and reserved lazily. A failed mapping gives an empty HugeMapping (data() null).
  explicit HugeMapping(std::size_t bytes);
  ~HugeMapping();
  HugeMapping(HugeMapping&& other) noexcept;
  HugeMapping& operator=(HugeMapping&& other) noexcept;
  HugeMapping(const HugeMapping&) = delete;
  HugeMapping& operator=(const HugeMapping&) = delete;

  std::uint8_t* data() const { return base_; }
  std::size_t size() const { return size_; }
  explicit operator bool() const { return base_ != nullptr; }

  // Faults every page in now (one write per 4 KiB), so that later writes fault nothing.
  void populate();

 private:
  std::uint8_t* base_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace hangscan
