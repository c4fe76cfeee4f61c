#include "watch/kernel_symbols.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "util/parse_number.h"

namespace hangscan {

KernelSymbols::KernelSymbols(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string addr, type, name;
    if (!(fields >> addr >> type >> name)) continue;
    if (type != "t" && type != "T" && type != "w" && type != "W") continue;
    auto a = parse_int<std::uint64_t>(addr, 16);
    if (!a || *a == 0) continue;  // not root: every address reads 0
    syms_.push_back({*a, std::move(name)});
  }
  std::sort(syms_.begin(), syms_.end(), [](const Sym& x, const Sym& y) { return x.addr < y.addr; });
}

std::string KernelSymbols::name(std::uint64_t addr) const {
  auto it = std::upper_bound(syms_.begin(), syms_.end(), addr,
                             [](std::uint64_t a, const Sym& s) { return a < s.addr; });
  if (it == syms_.begin()) return fmt::format("{:#x}", addr);
  --it;
  return fmt::format("{}+{:#x}", it->name, addr - it->addr);
}

}  // namespace hangscan
