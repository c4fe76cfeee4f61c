#include "unwind/module_symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include <cstdlib>
#include <optional>

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

std::vector<Frame> symbolize_module_address(Dwfl_Module* mod, std::uint64_t addr) {
  const std::uint64_t lookup = addr;
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
  return out;
}

OfflineModules::~OfflineModules() {
  for (auto& [key, m] : modules_) {
    if (m.dwfl != nullptr) dwfl_end(m.dwfl);
  }
}

OfflineModules::Module& OfflineModules::open(const std::string& key, const std::string& path) {
  auto it = modules_.find(key);
  if (it != modules_.end()) return it->second;
  Module m;
  if (callbacks_.find_elf == nullptr) {
    callbacks_.find_elf = dwfl_build_id_find_elf;
    callbacks_.find_debuginfo = dwfl_standard_find_debuginfo;
    callbacks_.section_address = dwfl_offline_section_address;
    callbacks_.debuginfo_path = &debuginfo_path_;
  }
  m.dwfl = dwfl_begin(&callbacks_);
  if (m.dwfl != nullptr) {
    dwfl_report_begin(m.dwfl);
    m.mod = dwfl_report_offline(m.dwfl, path.c_str(), path.c_str(), -1);
    dwfl_report_end(m.dwfl, nullptr, nullptr);
    if (m.mod != nullptr) {
      GElf_Addr bias = 0;
      m.ok = dwfl_module_getelf(m.mod, &bias) != nullptr;
      m.bias = bias;
    }
  }
  return modules_.emplace(key, m).first->second;
}

std::vector<Frame> OfflineModules::symbolize(const std::string& key, const std::string& path,
                                             std::uint64_t vaddr) {
  std::lock_guard<std::mutex> lock(mu_);
  Module& m = open(key, path);
  if (!m.ok) {
    Frame f;
    f.function = "??";
    return {f};
  }
  return symbolize_module_address(m.mod, vaddr + m.bias);
}

}  // namespace hangscan
