#include "discovery/environ_memory.h"

#include <array>
#include <string_view>

#include <fmt/format.h>

#include "target/symbol_lookup.h"

namespace hangscan {

namespace {

constexpr std::array<std::string_view, 3> kEnvironNames = {"__environ", "environ", "_environ"};

// The executable first (a copy-relocated `environ` there is the live one), then libc, then the
// rest: opening and indexing every ELF file of a torch process before reaching libc would
// cost far more than the read itself.
std::vector<std::string> search_order(const std::vector<std::string>& modules) {
  if (modules.empty()) return {};
  std::vector<std::string> out{modules.front()};
  auto is_libc = [](const std::string& m) {
    auto slash = m.rfind('/');
    std::string_view base = std::string_view(m).substr(slash == std::string::npos ? 0 : slash + 1);
    return base.starts_with("libc.so") || base.starts_with("libc-");
  };
  for (std::size_t i = 1; i < modules.size(); ++i)
    if (is_libc(modules[i])) out.push_back(modules[i]);
  for (std::size_t i = 1; i < modules.size(); ++i)
    if (!is_libc(modules[i])) out.push_back(modules[i]);
  return out;
}

}  // namespace

Result<std::vector<std::string>> read_environ_array(MemoryReader& mem, std::uint64_t array_addr,
                                                    const EnvironLimits& limits) {
  std::vector<std::string> out;
  if (array_addr == 0) return Error(Errc::not_found, "environ is NULL");
  if (array_addr % sizeof(std::uint64_t) != 0)
    return Error(Errc::bad_data, fmt::format("environ {:#x} is not pointer aligned", array_addr));
  std::size_t total = 0;
  // Pointers are read in blocks: one read per 64 entries instead of one per entry.
  constexpr std::size_t kBlock = 64;
  std::array<std::uint64_t, kBlock> ptrs{};
  for (std::size_t base = 0; base < limits.max_entries; base += kBlock) {
    std::uint64_t addr = array_addr + base * sizeof(std::uint64_t);
    std::size_t got = mem.read(addr, ptrs.data(), sizeof(ptrs)) / sizeof(std::uint64_t);
    if (got == 0)
      return Error(Errc::bad_data,
                   fmt::format("environ entry {} at {:#x} is unreadable", base, addr));
    for (std::size_t i = 0; i < got; ++i) {
      if (ptrs[i] == 0) return out;
      if (base + i >= limits.max_entries) break;
      auto s = mem.read_cstring(ptrs[i], limits.max_entry_bytes);
      if (!s)
        return Error(Errc::bad_data,
                     fmt::format("environ entry {} points to unreadable {:#x}", base + i, ptrs[i]));
      total += s->size();
      if (total > limits.max_total_bytes)
        return Error(Errc::bad_data, "environ is larger than the limit: not an environment");
      out.push_back(std::move(*s));
    }
  }
  return Error(Errc::bad_data, fmt::format("environ has more than {} entries: not an environment",
                                           limits.max_entries));
}

Result<std::vector<std::string>> read_environment_from_memory(Target& t) {
  ModuleSymbols syms(t);
  Error last(Errc::not_found, "no module defines environ");
  for (const auto& module : search_order(syms.modules())) {
    const ElfSymbols* elf = syms.elf(module);
    if (elf == nullptr) continue;
    std::optional<ElfSymbols::Sym> sym;
    for (auto name : kEnvironNames) {
      if ((sym = elf->symbol(name))) break;
    }
    if (!sym) continue;
    auto bias = syms.load_bias(module);
    if (!bias) continue;
    std::uint64_t var = sym->value + *bias;
    auto value = t.memory().read_u64(var);
    if (!value) {
      last =
          Error(Errc::bad_data, fmt::format("environ in {} at {:#x} is unreadable", module, var));
      continue;
    }
    // A NULL here is libc's unused copy when the executable holds the copy-relocated one.
    if (*value == 0) {
      last = Error(Errc::not_found, fmt::format("environ in {} is NULL", module));
      continue;
    }
    auto env = read_environ_array(t.memory(), *value);
    if (env) return env;
    last = env.error();
    last.with_context(fmt::format("environ of {}", module));
  }
  return last;
}

std::vector<std::string> read_environment(Target& t) {
  auto env = read_environment_from_memory(t);
  if (env) return std::move(env).value();
  return t.environment();
}

}  // namespace hangscan
