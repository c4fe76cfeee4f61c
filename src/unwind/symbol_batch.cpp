#include "unwind/symbol_batch.h"

#include <gelf.h>

#include <algorithm>
#include <numeric>

namespace hangscan {

namespace {

// Higher is preferred: a global beats a weak beats a local symbol at the same place.
int binding_rank(const GElf_Sym& sym) {
  switch (GELF_ST_BIND(sym.st_info)) {
    case STB_GLOBAL:
      return 3;
    case STB_WEAK:
      return 2;
    case STB_LOCAL:
      return 1;
    default:
      return 0;
  }
}

// One table entry, read once per pass and tested against every address.
struct SymbolEntry {
  const char* name = nullptr;
  GElf_Sym sym{};
  GElf_Addr value = 0;  // st_value adjusted into the Dwfl address space
  GElf_Word shndx = 0;
  Elf* elf = nullptr;
  GElf_Addr bias = 0;
};

// What one address has found so far.
struct Search {
  std::uint64_t addr = 0;
  const char* name = nullptr;  // the best sized symbol
  GElf_Sym sym{};
  GElf_Addr value = 0;
  const char* label = nullptr;  // the best size-less symbol (an assembly label)
  GElf_Addr label_value = 0;
  GElf_Addr min_label = 0;  // a label below this lies inside some sized symbol
  // The section holding `addr` in the ELF file last asked about (labels only).
  Elf* section_elf = nullptr;
  std::size_t section = SHN_UNDEF;
};

// Whether the address lies in section `shndx` of `elf` (for size-less labels only).
bool same_section(Search& s, const SymbolEntry& e) {
  if (e.shndx >= SHN_LORESERVE) return e.value == s.addr;  // absolute: exact match only
  if (s.section_elf != e.elf) {
    s.section_elf = e.elf;
    s.section = SHN_ABS;
    const GElf_Addr file_addr = s.addr - e.bias;
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(e.elf, scn)) != nullptr) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) != nullptr && file_addr >= shdr.sh_addr &&
          file_addr - shdr.sh_addr < shdr.sh_size) {
        s.section = elf_ndxscn(scn);
        break;
      }
    }
  }
  return e.shndx == s.section;
}

// The symbol `e`, which starts at or below `s.addr` and (if sized) covers it, against what `s`
// found so far; `min_label`: the largest end of the symbols read so far that start at or below
// the address, `e` included (any symbol below the address hides the labels inside it).
void consider(Search& s, const SymbolEntry& e, GElf_Addr min_label) {
  const GElf_Sym& sym = e.sym;
  if (s.name == nullptr || s.value < e.value || binding_rank(s.sym) < binding_rank(sym)) {
    if (sym.st_size != 0) {
      s.name = e.name;
      s.sym = sym;
      s.value = e.value;
    } else if (s.name == nullptr && e.value >= min_label && same_section(s, e)) {
      s.label = e.name;
      s.label_value = e.value;
    }
  } else if (sym.st_size != 0 && s.value == e.value) {
    // Same start: the tighter range wins unless its binding is weaker, then the binding.
    const int had = binding_rank(s.sym);
    const int now = binding_rank(sym);
    if ((s.sym.st_size > sym.st_size && had <= now) ||
        (s.sym.st_size >= sym.st_size && had < now)) {
      s.name = e.name;
      s.sym = sym;
      s.value = e.value;
    }
  }
}

bool usable(const SymbolEntry& e) { return usable_symbol(e.name, e.sym); }

// The largest symbol end seen so far at or below each of a pass's sorted addresses: a symbol
// raises it for every address from its start up (a Fenwick tree of maxima: both in O(log n)).
// Why: it is all a symbol changes for the addresses above its end, so a sized symbol is then
// tested only against the addresses it covers, not against every address above its start.
class EndsBelow {
 public:
  explicit EndsBelow(std::size_t n) : tree_(n + 1, 0) {}
  void raise_from(std::size_t i, GElf_Addr end) {
    for (std::size_t k = i + 1; k < tree_.size(); k += k & (~k + 1))
      tree_[k] = std::max(tree_[k], end);
  }
  GElf_Addr at(std::size_t i) const {
    GElf_Addr m = 0;
    for (std::size_t k = i + 1; k > 0; k -= k & (~k + 1)) m = std::max(m, tree_[k]);
    return m;
  }

 private:
  std::vector<GElf_Addr> tree_;
};

// One pass over table entries [first, end) for the searches in `active`, in table order (ties
// go to the first symbol read, as in dwfl_module_addrinfo).
void scan(Dwfl_Module* mod, int first, int end, std::vector<Search*>& active) {
  if (active.empty()) return;
  // Sorted by address: a symbol is tested only against the addresses at or above it.
  std::sort(active.begin(), active.end(),
            [](const Search* a, const Search* b) { return a->addr < b->addr; });
  EndsBelow ends(active.size());
  auto min_label = [&](std::size_t k) { return std::max(active[k]->min_label, ends.at(k)); };
  SymbolEntry e;
  for (int i = first; i < end; ++i) {
    e.name = dwfl_module_getsym_info(mod, i, &e.sym, &e.value, &e.shndx, &e.elf, &e.bias);
    if (!usable(e)) continue;
    auto from = std::lower_bound(active.begin(), active.end(), e.value,
                                 [](const Search* s, GElf_Addr v) { return s->addr < v; });
    auto k0 = static_cast<std::size_t>(from - active.begin());
    if (k0 == active.size()) continue;
    ends.raise_from(k0, e.value + e.sym.st_size);
    // A sized symbol names only the addresses it covers (a prefix of those above its start).
    for (std::size_t k = k0; k < active.size(); ++k) {
      if (e.sym.st_size != 0 && active[k]->addr - e.value >= e.sym.st_size) break;
      consider(*active[k], e, min_label(k));
    }
  }
  for (std::size_t k = 0; k < active.size(); ++k) active[k]->min_label = min_label(k);
}

}  // namespace

bool usable_symbol(const char* name, const GElf_Sym& sym) {
  const int type = GELF_ST_TYPE(sym.st_info);
  return name != nullptr && name[0] != '\0' && sym.st_shndx != SHN_UNDEF && type != STT_SECTION &&
         type != STT_FILE && type != STT_TLS;
}

std::vector<SymbolHit> find_symbols(Dwfl_Module* mod, std::span<const std::uint64_t> addrs) {
  std::vector<SymbolHit> out(addrs.size());
  const int count = dwfl_module_getsymtab(mod);
  const int first_global = dwfl_module_getsymtab_first_global(mod);
  if (count < 0 || first_global < 0 || addrs.empty()) return out;

  std::vector<Search> searches(addrs.size());
  std::vector<Search*> active;
  for (std::size_t i = 0; i < addrs.size(); ++i) {
    searches[i].addr = addrs[i];
    active.push_back(&searches[i]);
  }
  // Global symbols first (a table lists its locals first, then the globals).
  scan(mod, first_global == 0 ? 1 : first_global, count, active);
  // Then the locals, for the addresses no global covers (unless a global label sits exactly
  // on the address).
  if (first_global > 1) {
    std::vector<Search*> rest;
    for (auto& s : searches) {
      if (s.name == nullptr && (s.label == nullptr || s.label_value != s.addr)) rest.push_back(&s);
    }
    scan(mod, 1, first_global, rest);
  }
  for (std::size_t i = 0; i < searches.size(); ++i) {
    const Search& s = searches[i];
    if (s.name != nullptr) {
      out[i] = SymbolHit{s.name, s.value};
    } else if (s.label != nullptr && s.label_value >= s.min_label) {
      out[i] = SymbolHit{s.label, s.label_value, true};
    }
  }
  return out;
}

}  // namespace hangscan
