#include "unwind/dwfl_session.h"

#include "proc/target_file.h"
#include "unwind/debug_image.h"
#include "unwind/module_symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include <fmt/format.h>

namespace hangscan {

namespace {

std::string hex(const unsigned char* bits, int len) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(static_cast<std::size_t>(len) * 2);
  for (int i = 0; i < len; ++i) {
    out += kDigits[bits[i] >> 4];
    out += kDigits[bits[i] & 0xf];
  }
  return out;
}

}  // namespace

DwflSession::DwflSession(ModuleSource& source) : source_(source) {}

DwflSession::~DwflSession() {
  if (dwfl_ != nullptr) dwfl_end(dwfl_);
}

Result<std::unique_ptr<DwflSession>> DwflSession::create(ModuleSource& source) {
  std::unique_ptr<DwflSession> s(new DwflSession(source));
  s->callbacks_.find_elf = &DwflSession::find_elf;
  s->callbacks_.find_debuginfo = find_debuginfo_local;  // never debuginfod
  s->callbacks_.section_address = dwfl_offline_section_address;
  s->callbacks_.debuginfo_path = &s->debuginfo_path_;
  s->dwfl_ = dwfl_begin(&s->callbacks_);
  if (s->dwfl_ == nullptr) {
    return Error(Errc::internal, fmt::format("libdw: {}", dwfl_errmsg(-1)));
  }
  auto st = s->report_modules();
  if (!st) return std::move(st).error();
  return s;
}

Status DwflSession::report_modules() {
  // Group the mappings of each file: the module spans from its first mapping (file offset 0,
  // the first PT_LOAD) to the end of its last mapping.
  struct Span {
    std::uint64_t low = UINT64_MAX;
    std::uint64_t high = 0;
    const Mapping* first = nullptr;
  };
  std::map<std::string, Span> spans;
  std::vector<std::string> order;
  for (const auto& m : source_.mappings()) {
    bool vdso = m.path == "[vdso]";
    if (!m.is_file() && !vdso) continue;
    auto [it, inserted] = spans.try_emplace(m.path);
    if (inserted) order.push_back(m.path);
    Span& sp = it->second;
    if (m.start < sp.low) {
      sp.low = m.start;
      sp.first = &m;
    }
    sp.high = std::max(sp.high, m.end);
  }
  dwfl_report_begin(dwfl_);
  for (const auto& path : order) {
    const Span& sp = spans[path];
    if (sp.first == nullptr || (sp.first->offset != 0 && path != "[vdso]")) continue;
    auto data = std::make_unique<ModuleData>();
    if (path == "[vdso]") {
      data->image.resize(sp.high - sp.low);
      if (!source_.memory().read_exact(sp.low, data->image.data(), data->image.size())) continue;
    } else {
      auto local = source_.local_path(*sp.first);
      if (!local) {
        notes_.push_back(fmt::format("{}: file not available", path));
        continue;
      }
      data->local_path = *local;
    }
    Dwfl_Module* mod = dwfl_report_module(dwfl_, path.c_str(), sp.low, sp.high);
    if (mod == nullptr) {
      notes_.push_back(fmt::format("{}: {}", path, dwfl_errmsg(-1)));
      continue;
    }
    void** userdata = nullptr;
    dwfl_module_info(mod, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (userdata != nullptr) *userdata = data.get();
    modules_.push_back(std::move(data));
  }
  if (dwfl_report_end(dwfl_, nullptr, nullptr) != 0) {
    return Error(Errc::internal, fmt::format("libdw: {}", dwfl_errmsg(-1)));
  }
  return Ok{};
}

int DwflSession::find_elf(Dwfl_Module* /*mod*/, void** userdata, const char* /*modname*/,
                          Dwarf_Addr /*base*/, char** file_name, Elf** elfp) {
  auto* data = userdata != nullptr ? static_cast<ModuleData*>(*userdata) : nullptr;
  *elfp = nullptr;
  if (data == nullptr) return -1;
  if (!data->image.empty()) {
    *elfp = elf_memory(reinterpret_cast<char*>(data->image.data()), data->image.size());
    return -1;
  }
  int fd = open_regular_file(data->local_path);
  if (fd < 0) return -1;
  *file_name = strdup(data->local_path.c_str());
  return fd;
}

Frame DwflSession::unknown_frame(const RawFrame& raw) const {
  Frame f;
  f.kind = FrameKind::native;
  f.function = "??";
  f.pc = raw.pc;
  f.sp = raw.sp;
  for (const auto& m : source_.mappings()) {
    if (m.contains(raw.pc)) {
      f.module = m.path;
      f.offset = raw.pc - m.start + m.offset;
      break;
    }
  }
  return f;
}

DwflSession::ModuleData* DwflSession::data_of(Dwfl_Module* mod) {
  void** userdata = nullptr;
  dwfl_module_info(mod, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  return userdata != nullptr ? static_cast<ModuleData*>(*userdata) : nullptr;
}

const std::string& DwflSession::build_id_of(Dwfl_Module* mod, ModuleData* data,
                                            std::string& scratch) {
  if (data != nullptr && data->build_id) return *data->build_id;
  const unsigned char* bits = nullptr;
  GElf_Addr id_vaddr = 0;
  int id_len = dwfl_module_build_id(mod, &bits, &id_vaddr);
  std::string id = id_len > 0 ? hex(bits, id_len) : std::string();
  if (data == nullptr) return scratch = std::move(id);
  return *(data->build_id = std::move(id));
}

bool DwflSession::offline_module(Dwfl_Module* mod, std::string& key, std::string& path) const {
  const char* name =
      dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  ModuleData* data = data_of(mod);
  if (data == nullptr || data->local_path.empty()) return false;
  GElf_Addr bias = 0;
  if (dwfl_module_getelf(mod, &bias) == nullptr) return false;
  std::string scratch;
  const std::string& id = build_id_of(mod, data, scratch);
  key = !id.empty() ? id : std::string(name != nullptr ? name : "");
  path = data->local_path;
  return true;
}

void DwflSession::prepare(const std::vector<const RawFrame*>& frames, SymbolCache& cache) {
  struct Wanted {
    std::string path;
    std::vector<std::uint64_t> vaddrs;
  };
  std::map<std::string, Wanted> by_module;  // by module key
  std::vector<std::string> order;
  for (const RawFrame* raw : frames) {
    std::uint64_t lookup = raw->exact || raw->pc == 0 ? raw->pc : raw->pc - 1;
    Dwfl_Module* mod = dwfl_addrmodule(dwfl_, lookup);
    std::string key;
    std::string path;
    if (mod == nullptr || !offline_module(mod, key, path)) continue;
    GElf_Addr bias = 0;
    dwfl_module_getelf(mod, &bias);
    std::uint64_t offset = raw->pc - bias;
    if (cache.contains(key, offset, raw->exact)) continue;
    auto [it, fresh] = by_module.try_emplace(key);
    if (fresh) {
      it->second.path = path;
      order.push_back(key);
    }
    it->second.vaddrs.push_back(raw->exact || offset == 0 ? offset : offset - 1);
  }
  // DWARF first (it inflates on other threads), then the names on this one meanwhile.
  std::vector<std::pair<std::string, std::string>> modules;
  modules.reserve(order.size());
  for (const auto& key : order) modules.emplace_back(key, by_module[key].path);
  cache.prefetch_offline(modules);
  for (const auto& key : order)
    cache.prefetch_names(key, by_module[key].path, by_module[key].vaddrs);
}

std::vector<Frame> DwflSession::symbolize(const RawFrame& raw, SymbolCache& cache) {
  std::uint64_t lookup = raw.exact || raw.pc == 0 ? raw.pc : raw.pc - 1;
  Dwfl_Module* mod = dwfl_addrmodule(dwfl_, lookup);
  if (mod == nullptr) return {unknown_frame(raw)};

  const char* modname =
      dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  GElf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(mod, &bias);
  ModuleData* data = data_of(mod);
  std::string scratch;
  const std::string& build_id = build_id_of(mod, data, scratch);
  std::string module = modname != nullptr ? modname : "";
  std::uint64_t offset = raw.pc - bias;
  const std::string& key = build_id.empty() ? module : build_id;

  auto fill = [&](std::vector<Frame> frames) {
    for (auto& f : frames) {
      f.pc = raw.pc;
      f.sp = raw.sp;
      f.offset = offset;
      f.module = module;
      f.build_id = build_id;
    }
    return frames;
  };
  if (elf == nullptr) {
    Frame f = unknown_frame(raw);
    f.module = module;
    return fill({f});
  }
  if (auto hit = cache.find(key, offset, raw.exact)) return fill(std::move(*hit));

  // Symbolize through the run-wide module copy (one per build-id, shared by every target);
  // in-memory modules ([vdso]) through this session's own Dwfl.
  std::vector<Frame> out;
  std::uint64_t vaddr = raw.exact || offset == 0 ? offset : offset - 1;
  if (data != nullptr && !data->local_path.empty()) {
    out = cache.symbolize_offline(key, data->local_path, vaddr);
  } else {
    out = symbolize_module_address(mod, lookup);
  }
  cache.insert(key, offset, raw.exact, out);
  return fill(std::move(out));
}

}  // namespace hangscan
