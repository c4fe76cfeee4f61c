#include "unwind/symbol_ranges.h"

#include <gelf.h>

#include <algorithm>
#include <set>
#include <utility>

namespace hangscan {

SymbolRanges::SymbolRanges(Dwfl_Module* mod) {
  const int count = dwfl_module_getsymtab(mod);
  std::set<std::pair<Elf*, GElf_Addr>> files;  // where the symbols come from, with their bias
  for (int i = 1; i < count; ++i) {
    GElf_Sym sym;
    GElf_Addr value = 0;
    GElf_Word shndx = 0;
    Elf* elf = nullptr;
    GElf_Addr bias = 0;
    const char* name = dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, &elf, &bias);
    if (!usable_symbol(name, sym)) continue;
    bounds_.push_back(value);
    if (sym.st_size != 0) bounds_.push_back(value + sym.st_size);
    files.emplace(elf, bias);
  }
  // Section boundaries too: a label names only addresses of its own section.
  for (const auto& [elf, bias] : files) {
    Elf_Scn* scn = nullptr;
    while (elf != nullptr && (scn = elf_nextscn(elf, scn)) != nullptr) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr) continue;
      bounds_.push_back(shdr.sh_addr + bias);
      bounds_.push_back(shdr.sh_addr + shdr.sh_size + bias);
    }
  }
  std::sort(bounds_.begin(), bounds_.end());
  bounds_.erase(std::unique(bounds_.begin(), bounds_.end()), bounds_.end());
  // One pass names every boundary and one address inside every stretch that has an inside.
  std::vector<std::uint64_t> probes;
  probes.reserve(bounds_.size() * 2);
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    probes.push_back(bounds_[i]);
    const bool last = i + 1 == bounds_.size();
    if ((last && bounds_[i] != UINT64_MAX) || (!last && bounds_[i + 1] - bounds_[i] >= 2))
      probes.push_back(bounds_[i] + 1);
  }
  scanned_ = probes.size();
  auto hits = find_symbols(mod, probes);
  at_bound_.resize(bounds_.size());
  inside_.resize(bounds_.size());
  for (std::size_t i = 0, k = 0; i < bounds_.size(); ++i) {
    at_bound_[i] = hits[k++];
    if (k < probes.size() && probes[k] == bounds_[i] + 1 &&
        (i + 1 == bounds_.size() || probes[k] != bounds_[i + 1]))
      inside_[i] = hits[k++];
  }
}

std::vector<SymbolHit> SymbolRanges::find(std::span<const std::uint64_t> addrs) const {
  std::vector<SymbolHit> out(addrs.size());
  for (std::size_t i = 0; i < addrs.size(); ++i) {
    auto above = std::upper_bound(bounds_.begin(), bounds_.end(), addrs[i]);
    if (above == bounds_.begin()) continue;  // below every symbol: nothing names it
    auto at = static_cast<std::size_t>((above - 1) - bounds_.begin());
    out[i] = bounds_[at] == addrs[i] ? at_bound_[at] : inside_[at];
  }
  return out;
}

}  // namespace hangscan
