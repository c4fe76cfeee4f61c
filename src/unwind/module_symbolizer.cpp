#include "unwind/module_symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include <cerrno>
#include <cstdlib>
#include <future>
#include <limits>
#include <new>
#include <optional>
#include <system_error>

#include "unwind/debug_image.h"
#include "unwind/dwarf_lines.h"
#include "unwind/scope_chain.h"
#include "unwind/symbol_batch.h"
#include "util/job_control.h"

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

namespace {

// A native frame named after an ELF symbol (null: unnamed), demangled, without a symbol
// version.
Frame named_frame(const char* name) {
  Frame native;
  native.kind = FrameKind::native;
  if (name != nullptr) {
    // Versioned dynamic symbols ("pthread_cond_wait@@GLIBC_2.3.2"): the version is noise.
    std::string plain(name);
    auto at = plain.find('@');
    if (at != std::string::npos && at > 0) plain.resize(at);
    native.function = demangle(plain.c_str());
  } else {
    native.function = "??";
  }
  return native;
}

// The ELF symbol at `addr` (a Dwfl address).
Frame symbol_frame(Dwfl_Module* mod, std::uint64_t addr, bool* named) {
  GElf_Off sym_off = 0;
  GElf_Sym sym;
  const char* name = dwfl_module_addrinfo(mod, addr, &sym_off, &sym, nullptr, nullptr, nullptr);
  *named = name != nullptr;
  return named_frame(name);
}

// Where file:line come from: libdw's line table of the CU, or our DwarfLines.
struct LineSource {
  LineSource() = default;
  LineSource(Dwarf_Die* cu, const DwarfLines* t) : cudie(cu), table(t) {}

  Dwarf_Die* cudie = nullptr;
  const DwarfLines* table = nullptr;  // when set, libdw's line table is never decoded

  void row(std::uint64_t addr, std::optional<std::string>& file, std::optional<int>& line) const {
    if (table != nullptr) {
      if (auto r = table->lookup(addr)) {
        file = r->file;
        if (r->line > 0) line = r->line;
      }
      return;
    }
    Dwarf_Line* l = cudie != nullptr ? dwarf_getsrc_die(cudie, addr) : nullptr;
    int lineno = 0;
    if (const char* src = l != nullptr ? dwarf_linesrc(l, nullptr, nullptr) : nullptr) {
      file = src;
      if (dwarf_lineno(l, &lineno) == 0 && lineno > 0) line = lineno;
    }
  }
  // File `idx` of the CU's file table (DW_AT_call_file); libdw's table is read on first use.
  const char* file_name(Dwarf_Word idx) {
    if (table != nullptr) {
      const std::string* f = table->file(idx);
      return f != nullptr ? f->c_str() : nullptr;
    }
    if (!files_read_) {
      files_read_ = true;
      std::size_t n = 0;
      if (cudie == nullptr || dwarf_getsrcfiles(cudie, &files_, &n) != 0) files_ = nullptr;
    }
    return files_ != nullptr ? dwarf_filesrc(files_, idx, nullptr, nullptr) : nullptr;
  }

 private:
  bool files_read_ = false;
  Dwarf_Files* files_ = nullptr;
};

// The inline frame of one DW_TAG_inlined_subroutine, positioned at file:line.
Frame inline_frame(Dwarf_Die* die, std::optional<std::string> file, std::optional<int> line) {
  Frame inl;
  inl.kind = FrameKind::inline_frame;
  inl.function = die_function_name(die);
  inl.file = std::move(file);
  inl.line = line;
  return inl;
}

// Where an inlined callee was called from: its DW_AT_call_file/DW_AT_call_line, which is
// where its caller (the next frame out) stands.
void call_site(Dwarf_Die* inlined, LineSource& lines, std::optional<std::string>& file,
               std::optional<int>& line) {
  Dwarf_Attribute attr;
  Dwarf_Word idx = 0;
  Dwarf_Word call_line = 0;
  file.reset();
  line.reset();
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &idx) == 0) {
    if (const char* f = lines.file_name(idx)) file = f;
  }
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &call_line) == 0 &&
      call_line > 0 && call_line <= static_cast<Dwarf_Word>(std::numeric_limits<int>::max())) {
    line = static_cast<int>(call_line);
  }
}

// Inline frames (innermost first) and the native frame's file:line from the CU holding
// `addr` (an address of the CU's own DWARF): the path through the concrete DIE tree down to
// `addr` (scope_chain), walked from the inside out. The innermost frame stands at the
// line-table row of `addr`; each inlined_subroutine on the way out is an inline frame, and the
// frame outside it stands at its call site (DW_AT_call_file/DW_AT_call_line), up to the
// DW_TAG_subprogram that was compiled out of line: the native frame.
std::vector<Frame> scoped_frames(Dwarf_Die* cudie, std::uint64_t addr, LineSource lines,
                                 Frame native, bool named) {
  std::optional<std::string> file;
  std::optional<int> line;
  lines.row(addr, file, line);
  std::vector<Frame> out;
  std::vector<Dwarf_Die> chain = scope_chain(cudie, addr);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    int tag = dwarf_tag(&*it);
    if (tag == DW_TAG_subprogram) {
      if (!named) native.function = die_function_name(&*it);
      break;
    }
    if (tag != DW_TAG_inlined_subroutine) continue;  // lexical blocks
    out.push_back(inline_frame(&*it, file, line));
    call_site(&*it, lines, file, line);
  }
  native.file = file;
  native.line = line;
  out.push_back(std::move(native));
  return out;
}

// The CU of `addr`: through .debug_aranges when the file has them (as libdwfl does: an
// address they do not cover has no CU), else by asking every CU (clang writes no aranges).
bool find_cu(Dwarf* dbg, std::uint64_t addr, Dwarf_Die* cudie) {
  if (dwarf_addrdie(dbg, addr, cudie) != nullptr) return true;
  Dwarf_Aranges* aranges = nullptr;
  std::size_t count = 0;
  if (dwarf_getaranges(dbg, &aranges, &count) == 0 && count > 0) return false;
  Dwarf_Off off = 0;
  Dwarf_Off next = 0;
  std::size_t header = 0;
  while (dwarf_nextcu(dbg, off, &next, &header, nullptr, nullptr, nullptr) == 0) {
    if (dwarf_offdie(dbg, off + header, cudie) != nullptr && dwarf_haspc(cudie, addr) > 0)
      return true;
    off = next;
  }
  return false;
}

}  // namespace

std::vector<Frame> symbolize_module_address(Dwfl_Module* mod, std::uint64_t addr) {
  bool named = false;
  Frame native = symbol_frame(mod, addr, &named);
  Dwarf_Addr dwbias = 0;
  Dwarf_Die* cudie = dwfl_module_addrdie(mod, addr, &dwbias);
  return scoped_frames(cudie, addr - dwbias, LineSource{cudie, nullptr}, std::move(native), named);
}

OfflineModules::~OfflineModules() {
  for (auto& [key, m] : modules_) {
    if (m.pending.valid()) m.pending.wait();
    m.debug.reset();
    if (m.dwfl != nullptr) dwfl_end(m.dwfl);
  }
}

OfflineModules::Module& OfflineModules::open(const std::string& key, const std::string& path) {
  Module& m = modules_[key];
  if (m.opened) return m;
  m.opened = true;
  if (callbacks_.find_elf == nullptr) {
    callbacks_.find_elf = dwfl_build_id_find_elf;
    callbacks_.find_debuginfo = find_debuginfo_local;
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
      errno = 0;
      m.ok = dwfl_module_getelf(m.mod, &bias) != nullptr;
      m.bias = bias;
    }
  }
  // Its ELF symbols did not fit: its frames are "??", which the report must explain.
  if (!m.ok && errno == ENOMEM) starved_.insert(key);
  return m;
}

void OfflineModules::start_debug(Module& m) {
  if (!m.ok || m.debug_tried) return;
  m.debug_tried = true;
  if (auto file = dwarf_file_of(m.mod)) start_debug_file(m, *file);
}

void OfflineModules::start_debug_file(Module& m, const std::string& file) {
  m.debug_tried = true;
  try {
    m.pending = std::async(std::launch::async, [this, file] {
      block_job_control_stops();  // it may outlive this process's capture into the next freeze
      return DebugImage::open(file, inflater_);
    });
  } catch (const std::system_error&) {  // no thread to be had: open it here
    m.debug = DebugImage::open(file, inflater_);
  }
}

void OfflineModules::prefetch(const std::vector<std::pair<std::string, std::string>>& modules) {
  std::lock_guard<std::mutex> lock(mu_);
  auto is_build_id = [](const std::string& key) {
    return key.size() >= 16 && key.size() % 2 == 0 &&
           key.find_first_not_of("0123456789abcdef") == std::string::npos;
  };
  std::vector<const std::pair<std::string, std::string>*> later;
  for (const auto& km : modules) {
    Module& m = modules_[km.first];
    if (m.debug_tried) continue;
    auto file =
        is_build_id(km.first) ? find_debug_file(km.second, km.first, nullptr) : std::nullopt;
    if (file) start_debug_file(m, *file);
    else later.push_back(&km);
  }
  for (const auto* km : later) start_debug(open(km->first, km->second));
}

void OfflineModules::prefetch_names(const std::string& key, const std::string& path,
                                    const std::vector<std::uint64_t>& vaddrs) {
  std::lock_guard<std::mutex> lock(mu_);
  Module& m = open(key, path);
  if (!m.ok) return;
  std::vector<std::uint64_t> wanted;
  for (std::uint64_t v : vaddrs) {
    if (!m.names.contains(v)) wanted.push_back(v + m.bias);
  }
  if (wanted.empty()) return;
  if (!m.ranges && m.named_once) m.ranges = std::make_unique<SymbolRanges>(m.mod);
  m.named_once = true;
  auto hits = m.ranges ? m.ranges->find(wanted) : find_symbols(m.mod, wanted);
  for (std::size_t i = 0; i < hits.size(); ++i) m.names[wanted[i] - m.bias] = hits[i].name;
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
  // The DWARF is opened once per run, on the first address of the module (or earlier, when
  // prefetched); the ELF symbol is looked up while it inflates.
  start_debug(m);
  bool named = false;
  Frame native;
  if (auto known = m.names.find(vaddr); known != m.names.end()) {
    named = known->second != nullptr;
    native = named_frame(known->second);
  } else {
    native = symbol_frame(m.mod, vaddr + m.bias, &named);
  }
  try {
    return symbolize_dwarf(m, vaddr, native, named);
  } catch (const std::bad_alloc&) {
    // libdw stopped half-way through a change to this Dwarf: never touch it again (not even
    // dwarf_end). A few MB leak, instead of a crash or libdw's exit.
    (void)m.debug.release();
    m.line_tables.clear();
    starved_.insert(key);
    return scoped_frames(nullptr, vaddr, LineSource{}, std::move(native), named);
  }
}

std::set<std::string> OfflineModules::starved() const {
  std::lock_guard<std::mutex> lock(mu_);
  return starved_;
}

std::vector<Frame> OfflineModules::symbolize_dwarf(Module& m, std::uint64_t vaddr, Frame native,
                                                   bool named) {
  if (m.pending.valid()) m.debug = m.pending.get();
  Dwarf_Die cu;
  if (m.debug == nullptr || !find_cu(m.debug->dwarf(), vaddr, &cu)) {
    return scoped_frames(nullptr, vaddr, LineSource{}, std::move(native), named);
  }
  // Each CU's line program is parsed once (header and file names), then run per address.
  auto [it, fresh] = m.line_tables.try_emplace(dwarf_dieoffset(&cu));
  if (fresh) it->second = DwarfLines::parse(m.debug->dwarf(), &cu);
  const DwarfLines* table = it->second ? &*it->second : nullptr;
  return scoped_frames(&cu, vaddr, LineSource{&cu, table}, std::move(native), named);
}

}  // namespace hangscan
