// SymbolRanges: find_symbols for one module over a run, with the table's boundaries read once.
//
// Why: a batch of new addresses costs find_symbols one pass over the module's whole table
// however few they are (libtorch_cpu: 35,000 entries, milliseconds), and `watch` finishes a
// batch per process every few seconds, each with a few addresses never seen before: the
// largest share of its CPU in the profile (docs/performance.md). The boundaries are every
// usable entry's start, its end when sized, and the sections' starts and ends. Strictly inside two
// consecutive boundaries, everything find_symbols' choice depends on is the same for every address:
// the sized symbols that cover it, the symbols at or below it (so the labels and the largest end
// below), its section; what depends on the exact position (a label exactly at the address, an
// absolute symbol) can only be on a boundary. So one pass over the table, once, with every boundary
// and one address inside every stretch, answers every address of the module: a lookup is then a
// binary search (libtorch_cpu: ~70,000 stretches, ~3 MB, one pass of ~10 ms instead of one per
// batch). The answers are find_symbols' own (unit-tested against it, and it against
// dwfl_module_addrinfo, on real libraries).
#pragma once

#include <elfutils/libdwfl.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "unwind/symbol_batch.h"

namespace hangscan {

class SymbolRanges {
 public:
  // Reads the boundaries of every usable entry of `mod`'s symbol table and the sections, and
  // names each boundary and the inside of each stretch in one find_symbols pass (once).
  explicit SymbolRanges(Dwfl_Module* mod);

  // Exactly find_symbols(mod, addrs), by binary search: no pass over the table.
  std::vector<SymbolHit> find(std::span<const std::uint64_t> addrs) const;

  // How many addresses went through the one pass (tests and profiling).
  std::size_t scanned() const { return scanned_; }

 private:
  std::vector<std::uint64_t> bounds_;  // sorted, distinct
  std::vector<SymbolHit> at_bound_;    // the answer exactly at bounds_[i]
  std::vector<SymbolHit> inside_;      // the answer strictly between bounds_[i] and the next
  std::size_t scanned_ = 0;
};

}  // namespace hangscan
