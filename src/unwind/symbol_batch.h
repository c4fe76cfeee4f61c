// find_symbols: the ELF symbol of many addresses of one module in one pass over its table.
//
// Why: dwfl_module_addrinfo() scans the whole symbol table for every address; a stack of a
// torch process asks it ~30 times, ten of them in libtorch_cpu's 35,000 dynamic symbols, and
// on a core that was a fifth of `hangscan core`'s time. The stacks of a capture are known
// before any of them is named, so each module's addresses are answered together: one pass
// over the table, each symbol tested against every address. The choice of symbol is the one
// dwfl_module_addrinfo() makes (global symbols first, then locals; a containing sized symbol,
// the nearest start, the stronger binding; a size-less label in the same section as a last
// resort), so names do not depend on which path answered; the unit test compares the two on
// real libraries.
#pragma once

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <span>
#include <vector>

namespace hangscan {

struct SymbolHit {
  const char* name = nullptr;  // null: no symbol covers the address; owned by the Dwfl
  std::uint64_t value = 0;     // the symbol's address (Dwfl address space)
  bool label = false;          // a size-less symbol (the last resort), not a sized one
};

// The symbol of each address (Dwfl addresses of `mod`), in the order given.
std::vector<SymbolHit> find_symbols(Dwfl_Module* mod, std::span<const std::uint64_t> addrs);

// Whether a table entry can name an address at all (find_symbols skips the others): a defined
// symbol with a name that is not a section, file or TLS symbol.
bool usable_symbol(const char* name, const GElf_Sym& sym);

}  // namespace hangscan
