#include "python/locator.h"

#include <fmt/format.h>

#include <algorithm>

#include "python/asyncio_debug.h"
#include "python/debug_offsets.h"
#include "util/parse_number.h"
#include "util/pattern.h"

namespace hangscan::python {
namespace {

constexpr std::uint64_t kMaxScanBytes = 16u << 20;
constexpr std::size_t kScanChunk = 64 * 1024;
constexpr std::size_t kMaxScanChecks = 200000;

void note(std::vector<std::string>* log, std::string line) {
  if (log != nullptr) log->push_back("python: " + std::move(line));
}

std::string basename(const std::string& p) {
  auto pos = p.rfind('/');
  return pos == std::string::npos ? p : p.substr(pos + 1);
}

bool is_libpython(const std::string& path) { return basename(path).rfind("libpython", 0) == 0; }

// The modules worth looking at: libpython first, then the executable (first file mapping).
std::vector<std::string> candidate_modules(ModuleSymbols& syms) {
  std::vector<std::string> mods = syms.modules();
  std::vector<std::string> out;
  for (const auto& m : mods)
    if (is_libpython(m)) out.push_back(m);
  if (!mods.empty() && std::find(out.begin(), out.end(), mods.front()) == out.end())
    out.push_back(mods.front());
  return out;
}

// What one strategy found: the runtime (or 3.6's interp_head) and the module holding it.
struct Found {
  std::uint64_t runtime = 0;          // _PyRuntime, 0 for 3.6
  std::uint64_t interp_head_ptr = 0;  // set directly by 3.6 / scan strategies
  std::string module;
  std::string strategy;
};

std::optional<std::uint64_t> read_py_version(MemoryReader& mem, ModuleSymbols& syms,
                                             const std::string& module) {
  const ElfSymbols* e = syms.elf(module);
  if (e == nullptr) return std::nullopt;
  auto sym = e->symbol("Py_Version");
  auto bias = syms.load_bias(module);
  if (!sym || !bias) return std::nullopt;
  std::uint32_t v = 0;
  // Kernel cores may lack read-only pages: fall back to the file on disk.
  if (!mem.read_obj(sym->value + *bias, v) &&
      syms.read_from_file(module, sym->value + *bias, &v, sizeof(v)) != sizeof(v))
    return std::nullopt;
  if (((v >> 24) & 0xff) != 3) return std::nullopt;
  return v;
}

}  // namespace

std::optional<VersionHint> version_from_path(const std::string& path) {
  static const Pattern kName(R"(python(\d)\.(\d+))");
  static const Pattern kDir(R"(/(\d)\.(\d+)\.(\d+)/)");
  std::string base = basename(path);
  auto m = kName.search_groups(base);
  if (!m) return std::nullopt;
  // A name like python3.99999999999 is no version: no hint, the target's memory decides.
  auto major = parse_int_in<int>((*m)[1], 2, 9);
  auto minor = parse_int_in<int>((*m)[2], 0, 999);
  if (!major || !minor) return std::nullopt;
  VersionHint h;
  h.major = *major;
  h.minor = *minor;
  h.full = fmt::format("{}.{}", h.major, h.minor);
  auto d = kDir.search_groups(path);
  if (d && parse_int<int>((*d)[1]) == h.major && parse_int<int>((*d)[2]) == h.minor)
    h.full = (*d)[1] + "." + (*d)[2] + "." + (*d)[3];
  return h;
}

std::optional<std::uint64_t> scan_for_interp_head(MemoryReader& mem, std::uint64_t start,
                                                  std::uint64_t size, const PyOffsets& o) {
  size = std::min(size, kMaxScanBytes);
  std::vector<std::uint64_t> chunk(kScanChunk / 8);
  std::size_t checks = 0;
  for (std::uint64_t off = 0; off < size; off += kScanChunk) {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kScanChunk, size - off));
    std::size_t got = mem.read(start + off, chunk.data(), want);
    for (std::size_t i = 0; i < got / 8; ++i) {
      std::uint64_t interp = chunk[i];
      if (interp < 0x10000 || (interp & 7) != 0) continue;
      if (++checks > kMaxScanChecks) return std::nullopt;
      std::uint64_t ts = 0;
      std::uint64_t back = 0;
      if (mem.read_obj(interp + o.interp_threads_head, ts) && ts != 0 && (ts & 7) == 0 &&
          mem.read_obj(ts + o.tstate_interp, back) && back == interp)
        return start + off + i * 8;
    }
  }
  return std::nullopt;
}

Result<Located> locate_interpreter(Target& target, std::vector<std::string>* log) {
  ModuleSymbols syms(target);
  MemoryReader& mem = target.memory();
  std::vector<std::string> mods = candidate_modules(syms);
  std::optional<VersionHint> hint;
  for (const auto& m : mods) {
    if ((hint = version_from_path(m))) break;
  }
  std::optional<Found> found;

  // 1. _PyRuntime in .dynsym/.symtab (3.7+, static or shared, PIE or not).
  for (const auto& m : mods) {
    const ElfSymbols* e = syms.elf(m);
    auto sym = e != nullptr ? e->symbol("_PyRuntime") : std::nullopt;
    auto bias = syms.load_bias(m);
    if (sym && bias) {
      found = Found{sym->value + *bias, 0, m, "symbol _PyRuntime"};
      break;
    }
  }
  note(log, found ? fmt::format("strategy 'symbol _PyRuntime': {:#x} in {}", found->runtime,
                                found->module)
                  : "strategy 'symbol _PyRuntime': not found");

  // 2. The .PyRuntime section (3.12+ builds place _PyRuntime there, even when stripped).
  if (!found) {
    for (const auto& m : mods) {
      if (auto sec = syms.section(m, ".PyRuntime")) {
        found = Found{sec->start, 0, m, "section .PyRuntime"};
        break;
      }
    }
    note(log, found ? fmt::format("strategy 'section .PyRuntime': {:#x}", found->runtime)
                    : "strategy 'section .PyRuntime': not found");
  }

  // 3. 3.6 has no _PyRuntime: the static interp_head (symtab), or the GIL holder's interp.
  if (!found) {
    for (const auto& m : mods) {
      const ElfSymbols* e = syms.elf(m);
      auto bias = syms.load_bias(m);
      if (e == nullptr || !bias) continue;
      if (auto sym = e->symbol("interp_head")) {
        found = Found{0, sym->value + *bias, m, "symbol interp_head (3.6)"};
        break;
      }
    }
    note(log, found ? fmt::format("strategy 'symbol interp_head': {:#x}", found->interp_head_ptr)
                    : "strategy 'symbol interp_head': not found");
  }

  // The version: the cookie, Py_Version, or the module's name.
  std::string version;
  std::optional<PyLayout> layout;
  std::string module = found ? found->module : (mods.empty() ? "" : mods.front());
  if (found && found->runtime != 0 && has_debug_cookie(mem, found->runtime)) {
    std::vector<std::uint8_t> raw(debug_offsets_max_size());
    std::size_t got = mem.read(found->runtime, raw.data(), raw.size());
    std::uint64_t hex = 0;
    auto parsed = parse_debug_offsets(raw.data(), got, &hex);
    version = version_from_hex(hex);
    note(log, fmt::format("version {} from _Py_DebugOffsets", version));
    if (!parsed) return std::move(parsed.error());
    layout = std::move(parsed.value());
  } else if (auto v = read_py_version(mem, syms, module)) {
    version = version_from_hex(*v);
    int minor = static_cast<int>((*v >> 16) & 0xff);
    note(log, fmt::format("version {} from Py_Version", version));
    hint = VersionHint{3, minor, version};
  } else if (hint) {
    version = hint->full;
    note(log, fmt::format("version {} from the module name", version));
  }
  if (!layout && hint) layout = builtin_layout(hint->major, hint->minor);
  if (!layout) {
    if (version.empty() && !found) {
      note(log, "no Python runtime found: not a Python process");
      return Error(Errc::not_found, "not a Python process");
    }
    if (version.empty())
      return Error(Errc::unsupported,
                   "Python runtime found but its version is unknown (no Py_Version, "
                   "no _Py_DebugOffsets, no version in the library name)");
    if (hint && hint->major == 3 && hint->minor >= 13)
      return Error(Errc::unsupported,
                   fmt::format("CPython {}: _Py_DebugOffsets not found; hangscan reads {}", version,
                               supported_versions()));
    return Error(Errc::unsupported, fmt::format("CPython {} is not supported (hangscan reads {})",
                                                version, supported_versions()));
  }

  // 4. Last resort: scan .data/.bss of the Python modules for the interpreter list head.
  if (!found) {
    for (const auto& m : mods) {
      for (const char* name : {".PyRuntime", ".data", ".bss"}) {
        auto sec = syms.section(m, name);
        if (!sec) continue;
        if (auto at = scan_for_interp_head(mem, sec->start, sec->size, layout->off)) {
          found = Found{0, *at, m, fmt::format("scan of {} {}", basename(m), name)};
          break;
        }
      }
      if (found) break;
    }
    note(log, found ? fmt::format("strategy 'scan .data/.bss': interpreter head at {:#x}",
                                  found->interp_head_ptr)
                    : "strategy 'scan .data/.bss': nothing plausible");
    if (!found)
      return Error(Errc::not_found,
                   fmt::format("CPython {} libraries are mapped but the interpreter was not found",
                               version));
  }

  Located loc;
  loc.layout = std::move(*layout);
  loc.version = version;
  loc.locator = found->strategy;
  loc.module = found->module;
  const PyOffsets& o = loc.layout.off;
  if (found->runtime != 0) {
    loc.interp_head_ptr = found->runtime + static_cast<std::uint64_t>(o.runtime_interpreters_head);
    if (o.runtime_gil >= 0)
      loc.gil_struct = found->runtime + static_cast<std::uint64_t>(o.runtime_gil);
    if (o.runtime_finalizing >= 0)
      loc.finalizing_ptr = found->runtime + static_cast<std::uint64_t>(o.runtime_finalizing);
    if (o.runtime_gc_collecting >= 0)
      loc.gc_collecting_ptr = found->runtime + static_cast<std::uint64_t>(o.runtime_gc_collecting);
  } else {
    loc.interp_head_ptr = found->interp_head_ptr;
  }
  if (loc.layout.minor == 6) {
    if (auto cur = syms.find("_PyThreadState_Current", found->module))
      loc.gil_current_ptr = cur->address;
    // 3.6 keeps these in globals: _Py_Finalizing (exported), gcmodule.c's static `collecting`
    // and ceval_gil.h's static `gil_last_holder` (.symtab only: unknown on stripped builds).
    if (auto fin = syms.find("_Py_Finalizing", found->module)) loc.finalizing_ptr = fin->address;
    if (auto gc = syms.find("collecting", found->module)) loc.gc_collecting_ptr = gc->address;
    if (auto last = syms.find("gil_last_holder", found->module))
      loc.gil_last_holder_ptr = last->address;
  }
  if (loc.layout.off.gen_iframe >= 0)  // 3.14+: _asyncio describes itself
    loc.asyncio = find_asyncio_layout(syms, mem, loc.layout, &loc.asyncio_missing);
  std::uint64_t interp = 0;
  if (mem.read_obj(loc.interp_head_ptr, interp) && interp != 0) {
    ObjectReader objects(mem, loc.layout);
    std::string torch;
    loc.torch = imported_torch(objects, loc.layout.off, interp, &torch);
    if (!torch.empty())
      note(log, loc.torch != nullptr
                    ? fmt::format("torch {}: tensors read", torch)
                    : fmt::format("torch {}: no generated layout, tensors not read "
                                  "(tools/gen_torch_offsets.py)",
                                  torch));
  }
  note(log, fmt::format("CPython {} via {}; layout from {}", loc.version, loc.locator,
                        loc.layout.source));
  return loc;
}

Result<std::unique_ptr<PythonReader>> PythonReader::locate(Target& target,
                                                           std::vector<std::string>* log) {
  auto loc = locate_interpreter(target, log);
  if (!loc) return std::move(loc.error());
  return std::make_unique<PythonReader>(std::move(loc.value()));
}

}  // namespace hangscan::python
