// guard_pages(): which pages of a range of a live process are guard regions.
//
// Why: glibc 2.42 and later put a thread stack's guard page in with madvise(MADV_GUARD_INSTALL)
// (Linux 6.13+) instead of a PROT_NONE mapping. Such a page lies inside a readable mapping, is
// absent from /proc/PID/maps, and faults on every read: a core writer finds a hole where it
// expected memory. The kernel marks it in /proc/PID/pagemap (PM_GUARD_REGION, bit 58, Linux
// 6.14+), so a hole that is a guard page is told apart from memory that could not be read.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace hangscan {

// The guard-region runs of [start, end) (page-aligned), in order; empty where there are none
// or where pagemap cannot be read (an older kernel, no rights, the process gone).
std::vector<std::pair<std::uint64_t, std::uint64_t>> guard_pages(int pid, std::uint64_t start,
                                                                 std::uint64_t end);

}  // namespace hangscan
