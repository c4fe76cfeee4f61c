#include "unwind/dwfl_session.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>

#include <fmt/format.h>

namespace hangscan {

std::string demangle(const char* name) {
  if (name == nullptr) return "??";
  if (name[0] == '_' && name[1] == 'Z') {
    int status = 0;
    char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status == 0 && out != nullptr) {
      std::string s(out);
      std::free(out);
      return s;
    }
    std::free(out);
  }
  return name;
}

namespace {

std::string hex(const unsigned char* bits, int len) {
  std::string out;
  out.reserve(static_cast<std::size_t>(len) * 2);
  for (int i = 0; i < len; ++i) out += fmt::format("{:02x}", bits[i]);
  return out;
}

// Name of a DW_TAG_subprogram or DW_TAG_inlined_subroutine, following abstract origins.
std::string die_function_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
    if (dwarf_attr_integrate(die, at, &attr) != nullptr) {
      if (const char* s = dwarf_formstring(&attr)) return demangle(s);
    }
  }
  if (const char* s = dwarf_diename(die)) return s;
  return "??";
}

}  // namespace

DwflSession::DwflSession(Target& target) : target_(target) {}

DwflSession::~DwflSession() {
  if (dwfl_ != nullptr) dwfl_end(dwfl_);
}

Result<std::unique_ptr<DwflSession>> DwflSession::create(Target& target) {
  std::unique_ptr<DwflSession> s(new DwflSession(target));
  s->callbacks_.find_elf = &DwflSession::find_elf;
  s->callbacks_.find_debuginfo = dwfl_standard_find_debuginfo;
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
  for (const auto& m : target_.mappings()) {
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
      if (!target_.memory().read_exact(sp.low, data->image.data(), data->image.size())) continue;
    } else {
      auto local = target_.local_path(*sp.first);
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
  int fd = ::open(data->local_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  *file_name = strdup(data->local_path.c_str());
  return fd;
}

Frame DwflSession::unknown_frame(const RawFrame& raw) const {
  Frame f;
  f.kind = FrameKind::native;
  f.function = "??";
  f.pc = raw.pc;
  for (const auto& m : target_.mappings()) {
    if (m.contains(raw.pc)) {
      f.module = m.path;
      f.offset = raw.pc - m.start + m.offset;
      break;
    }
  }
  return f;
}

std::vector<Frame> DwflSession::symbolize(const RawFrame& raw, SymbolCache& cache) {
  std::uint64_t lookup = raw.exact || raw.pc == 0 ? raw.pc : raw.pc - 1;
  Dwfl_Module* mod = dwfl_addrmodule(dwfl_, lookup);
  if (mod == nullptr) return {unknown_frame(raw)};

  const char* modname = dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr,
                                         nullptr, nullptr);
  GElf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(mod, &bias);
  std::string build_id;
  const unsigned char* bits = nullptr;
  GElf_Addr id_vaddr = 0;
  int id_len = dwfl_module_build_id(mod, &bits, &id_vaddr);
  if (id_len > 0) build_id = hex(bits, id_len);
  std::string module = modname != nullptr ? modname : "";
  std::uint64_t offset = raw.pc - bias;
  const std::string& key = build_id.empty() ? module : build_id;

  auto fill = [&](std::vector<Frame> frames) {
    for (auto& f : frames) {
      f.pc = raw.pc;
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

  Frame native;
  native.kind = FrameKind::native;
  GElf_Off sym_off = 0;
  GElf_Sym sym;
  const char* name = dwfl_module_addrinfo(mod, lookup, &sym_off, &sym, nullptr, nullptr, nullptr);
  if (name != nullptr) {
    // Versioned dynamic symbols ("pthread_cond_wait@@GLIBC_2.3.2"): the version is noise.
    std::string plain(name);
    auto at = plain.find('@');
    if (at != std::string::npos && at > 0) plain.resize(at);
    native.function = demangle(plain.c_str());
  } else {
    native.function = "??";
  }

  std::optional<std::string> file;
  std::optional<int> line;
  if (Dwfl_Line* l = dwfl_module_getsrc(mod, lookup)) {
    int lineno = 0;
    if (const char* src = dwfl_lineinfo(l, nullptr, &lineno, nullptr, nullptr, nullptr)) {
      file = src;
      if (lineno > 0) line = lineno;
    }
  }

  std::vector<Frame> out;
  Dwarf_Addr dwbias = 0;
  if (Dwarf_Die* cudie = dwfl_module_addrdie(mod, lookup, &dwbias)) {
    Dwarf_Die* scopes = nullptr;
    int n = dwarf_getscopes(cudie, lookup - dwbias, &scopes);
    Dwarf_Files* files = nullptr;
    std::size_t nfiles = 0;
    bool have_files = dwarf_getsrcfiles(cudie, &files, &nfiles) == 0;
    for (int i = 0; i < n; ++i) {
      int tag = dwarf_tag(&scopes[i]);
      if (tag == DW_TAG_subprogram) {
        if (name == nullptr) native.function = die_function_name(&scopes[i]);
        break;
      }
      if (tag != DW_TAG_inlined_subroutine) continue;
      Frame inl;
      inl.kind = FrameKind::inline_frame;
      inl.function = die_function_name(&scopes[i]);
      inl.file = file;
      inl.line = line;
      out.push_back(std::move(inl));
      // The next frame out is positioned at this inline call site.
      Dwarf_Attribute attr;
      Dwarf_Word idx = 0;
      Dwarf_Word call_line = 0;
      file.reset();
      line.reset();
      if (have_files && dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &idx) == 0) {
        if (const char* f = dwarf_filesrc(files, idx, nullptr, nullptr)) file = f;
      }
      if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &call_line) == 0 && call_line > 0) {
        line = static_cast<int>(call_line);
      }
    }
    std::free(scopes);
  }
  native.file = file;
  native.line = line;
  out.push_back(std::move(native));
  cache.insert(key, offset, raw.exact, out);
  return fill(std::move(out));
}

}  // namespace hangscan
