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

namespace {

// The runtime one module holds, by the strategies in order: _PyRuntime in .dynsym/.symtab
// (3.7+), the .PyRuntime section (3.12+, even stripped), 3.6's static interp_head.
std::optional<Found> runtime_in(ModuleSymbols& syms, const std::string& m) {
  const ElfSymbols* e = syms.elf(m);
  auto bias = syms.load_bias(m);
  if (e != nullptr && bias) {
    if (auto sym = e->symbol("_PyRuntime"))
      return Found{sym->value + *bias, 0, m, "symbol _PyRuntime"};
  }
  if (auto sec = syms.section(m, ".PyRuntime"))
    return Found{sec->start, 0, m, "section .PyRuntime"};
  if (e != nullptr && bias) {
    if (auto sym = e->symbol("interp_head"))
      return Found{0, sym->value + *bias, m, "symbol interp_head (3.6)"};
  }
  return std::nullopt;
}

struct Described {
  std::string version;
  PyLayout layout;
};

// The version and layout of the runtime in `module` (`found` null: none was found there): the
// cookie, Py_Version, or the module's name.
Result<Described> describe_runtime(MemoryReader& mem, ModuleSymbols& syms, const Found* found,
                                   const std::string& module, std::optional<VersionHint> hint,
                                   std::vector<std::string>* log) {
  std::string version;
  std::optional<PyLayout> layout;
  if (found != nullptr && found->runtime != 0 && has_debug_cookie(mem, found->runtime)) {
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
  if (layout) return Described{version, std::move(*layout)};
  if (version.empty() && found == nullptr) {
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

// 4. Last resort, when no module names its runtime: scan .data/.bss of the Python modules for
// the interpreter list head.
std::optional<Found> scan_modules(MemoryReader& mem, ModuleSymbols& syms,
                                  const std::vector<std::string>& mods, const PyOffsets& o) {
  for (const auto& m : mods) {
    for (const char* name : {".PyRuntime", ".data", ".bss"}) {
      auto sec = syms.section(m, name);
      if (!sec) continue;
      if (auto at = scan_for_interp_head(mem, sec->start, sec->size, o))
        return Found{0, *at, m, fmt::format("scan of {} {}", basename(m), name)};
    }
  }
  return std::nullopt;
}

// When no module names its runtime: the version from the names, then the scan (strategy 4).
Result<Found> locate_by_scan(MemoryReader& mem, ModuleSymbols& syms,
                             const std::vector<std::string>& mods,
                             const std::optional<VersionHint>& hint,
                             std::vector<std::string>* log) {
  note(log,
       "strategies 'symbol _PyRuntime', 'section .PyRuntime', 'symbol interp_head': not found");
  auto d = describe_runtime(mem, syms, nullptr, mods.empty() ? "" : mods.front(), hint, log);
  if (!d) return std::move(d.error());
  auto at = scan_modules(mem, syms, mods, d->layout.off);
  note(log, at ? fmt::format("strategy 'scan .data/.bss': interpreter head at {:#x}",
                             at->interp_head_ptr)
               : "strategy 'scan .data/.bss': nothing plausible");
  if (!at)
    return Error(Errc::not_found,
                 fmt::format("CPython {} libraries are mapped but the interpreter was not found",
                             d->version));
  return std::move(*at);
}

// The roots, layout and names of one found runtime (3.6 keeps its roots in globals).
Located located_of(const Found& found, Described d, ModuleSymbols& syms) {
  Located loc;
  loc.layout = std::move(d.layout);
  loc.version = std::move(d.version);
  loc.locator = found.strategy;
  loc.module = found.module;
  const PyOffsets& o = loc.layout.off;
  if (found.runtime != 0) {
    loc.interp_head_ptr = found.runtime + static_cast<std::uint64_t>(o.runtime_interpreters_head);
    if (o.runtime_gil >= 0)
      loc.gil_struct = found.runtime + static_cast<std::uint64_t>(o.runtime_gil);
    if (o.runtime_finalizing >= 0)
      loc.finalizing_ptr = found.runtime + static_cast<std::uint64_t>(o.runtime_finalizing);
    if (o.runtime_gc_collecting >= 0)
      loc.gc_collecting_ptr = found.runtime + static_cast<std::uint64_t>(o.runtime_gc_collecting);
  } else {
    loc.interp_head_ptr = found.interp_head_ptr;
  }
  if (loc.layout.minor == 6) {
    if (auto cur = syms.find("_PyThreadState_Current", found.module))
      loc.gil_current_ptr = cur->address;
    // 3.6 keeps these in globals: _Py_Finalizing (exported), gcmodule.c's static `collecting`
    // and ceval_gil.h's static `gil_last_holder` (.symtab only: unknown on stripped builds).
    if (auto fin = syms.find("_Py_Finalizing", found.module)) loc.finalizing_ptr = fin->address;
    if (auto gc = syms.find("collecting", found.module)) loc.gc_collecting_ptr = gc->address;
    if (auto last = syms.find("gil_last_holder", found.module))
      loc.gil_last_holder_ptr = last->address;
  }
  return loc;
}

bool same_layout(const PyLayout& a, const PyLayout& b) {
  return a.minor == b.minor && a.source == b.source && a.free_threaded == b.free_threaded;
}

// The runtime to read among those found: the first live one (the executable's when it has a
// live one: the program's main runtime, whose version the report names), with every other
// live one of the same layout walked after it. With none live (before Py_Initialize, after
// Py_Finalize, or memory unreadable) the first found, as a process with one runtime.
Located choose_runtime(std::vector<Located> runtimes, const std::string& exe, MemoryReader& mem,
                       std::vector<std::string>* log) {
  std::vector<std::size_t> live;
  for (std::size_t i = 0; i < runtimes.size(); ++i) {
    bool up = runtime_is_live(mem, runtimes[i], runtimes[i].layout.off);
    if (runtimes.size() > 1)
      note(log, fmt::format("runtime in {}: {}", runtimes[i].module,
                            up ? "live" : "not initialized (no interpreter with a thread)"));
    if (up) live.push_back(i);
  }
  if (live.empty()) return std::move(runtimes.front());
  std::stable_partition(live.begin(), live.end(),
                        [&](std::size_t i) { return runtimes[i].module == exe; });
  Located chosen = std::move(runtimes[live.front()]);
  for (std::size_t k = 1; k < live.size(); ++k) {
    const Located& other = runtimes[live[k]];
    if (same_layout(other.layout, chosen.layout)) {
      chosen.more_runtimes.push_back(other);
    } else {
      note(log, fmt::format("live runtime in {} (CPython {}) not read: its layout differs from "
                            "the one in {}",
                            other.module, other.version, chosen.module));
    }
  }
  return chosen;
}

// What is read once the runtime is chosen: 3.14's asyncio description, torch's release.
void add_module_layouts(Located& loc, ModuleSymbols& syms, MemoryReader& mem,
                        std::vector<std::string>* log) {
  if (loc.layout.off.gen_iframe >= 0) {  // 3.14+: _asyncio describes itself
    auto found = find_asyncio_layout(syms, mem, loc.layout);
    if (found) loc.asyncio = *found;
    else loc.asyncio_missing = found.error().message;
  }
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
}

}  // namespace

bool runtime_is_live(MemoryReader& mem, const RuntimeRoots& rt, const PyOffsets& o) {
  std::uint64_t interp = 0;
  if (!mem.read_obj(rt.interp_head_ptr, interp)) return false;
  for (std::size_t n = 0; interp != 0 && n < kMaxInterpreters; ++n) {
    std::uint64_t ts = 0;
    std::uint64_t back = 0;
    if (mem.read_obj(interp + o.interp_threads_head, ts) && ts != 0 &&
        mem.read_obj(ts + o.tstate_interp, back) && back == interp)
      return true;
    if (!mem.read_obj(interp + o.interp_next, interp)) return false;
  }
  return false;
}

Result<Located> locate_interpreter(Target& target, std::vector<std::string>* log) {
  ModuleSymbols syms(target);
  MemoryReader& mem = target.memory();
  std::vector<std::string> mods = candidate_modules(syms);
  std::optional<VersionHint> hint;
  for (const auto& m : mods) {
    if ((hint = version_from_path(m))) break;
  }
  std::vector<Found> found;
  for (const auto& m : mods) {
    if (auto f = runtime_in(syms, m)) {
      note(log, fmt::format("strategy '{}': {:#x} in {}", f->strategy,
                            f->runtime != 0 ? f->runtime : f->interp_head_ptr, f->module));
      found.push_back(std::move(*f));
    }
  }
  if (found.empty()) {
    auto at = locate_by_scan(mem, syms, mods, hint, log);
    if (!at) return std::move(at.error());
    found.push_back(std::move(*at));
  }
  std::vector<Located> runtimes;
  std::optional<Error> first_error;
  for (const auto& f : found) {
    auto own = version_from_path(f.module);
    auto d = describe_runtime(mem, syms, &f, f.module, own ? own : hint, log);
    if (d) {
      runtimes.push_back(located_of(f, std::move(*d), syms));
    } else if (!first_error) {
      first_error = std::move(d.error());
    }
  }
  if (runtimes.empty()) return std::move(*first_error);
  Located loc = choose_runtime(std::move(runtimes), syms.modules().front(), mem, log);
  add_module_layouts(loc, syms, mem, log);
  note(log, fmt::format("CPython {} via {} in {}; layout from {}", loc.version, loc.locator,
                        loc.module, loc.layout.source));
  return loc;
}

Result<std::unique_ptr<PythonReader>> PythonReader::locate(Target& target,
                                                           std::vector<std::string>* log) {
  auto loc = locate_interpreter(target, log);
  if (!loc) return std::move(loc.error());
  return std::make_unique<PythonReader>(std::move(loc.value()));
}

}  // namespace hangscan::python
