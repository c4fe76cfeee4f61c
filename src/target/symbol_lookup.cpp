#include "target/symbol_lookup.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace hangscan {
namespace {

constexpr std::uint64_t kPageMask = ~std::uint64_t{0xfff};

// RAII for the fd and the Elf handle while a file is indexed.
struct ElfHandle {
  int fd = -1;
  Elf* elf = nullptr;
  ~ElfHandle() {
    if (elf != nullptr) elf_end(elf);
    if (fd >= 0) close(fd);
  }
};

void index_symbols(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr,
                   std::map<std::string, ElfSymbols::Sym, std::less<>>& out) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr || shdr.sh_entsize == 0) return;
  std::size_t count = shdr.sh_size / shdr.sh_entsize;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
    if (sym.st_shndx == SHN_UNDEF || sym.st_name == 0) continue;
    int type = GELF_ST_TYPE(sym.st_info);
    if (type != STT_OBJECT && type != STT_FUNC && type != STT_TLS && type != STT_NOTYPE &&
        type != STT_GNU_IFUNC)
      continue;
    const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
    if (name == nullptr || *name == '\0') continue;
    // Keep the first definition; a later local of the same name must not shadow a global.
    out.emplace(name, ElfSymbols::Sym{sym.st_value, sym.st_size});
  }
}

}  // namespace

std::unique_ptr<ElfSymbols> ElfSymbols::open(const std::string& local_path) {
  if (elf_version(EV_CURRENT) == EV_NONE) return nullptr;
  ElfHandle h;
  h.fd = ::open(local_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (h.fd < 0) return nullptr;
  h.elf = elf_begin(h.fd, ELF_C_READ_MMAP, nullptr);
  if (h.elf == nullptr || elf_kind(h.elf) != ELF_K_ELF) return nullptr;
  GElf_Ehdr ehdr;
  if (gelf_getehdr(h.elf, &ehdr) == nullptr) return nullptr;

  auto out = std::unique_ptr<ElfSymbols>(new ElfSymbols());
  out->path_ = local_path;
  out->is_exec_ = ehdr.e_type == ET_EXEC;

  std::size_t phnum = 0;
  if (elf_getphdrnum(h.elf, &phnum) == 0) {
    for (std::size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(h.elf, static_cast<int>(i), &ph) == nullptr) continue;
      if (ph.p_type != PT_LOAD) continue;
      out->loads_.push_back(Load{ph.p_vaddr, ph.p_offset, ph.p_filesz, ph.p_memsz});
    }
  }

  std::size_t shstrndx = 0;
  if (elf_getshdrstrndx(h.elf, &shstrndx) != 0) return out;
  Elf_Scn* dynsym = nullptr;
  Elf_Scn* symtab = nullptr;
  GElf_Shdr dynsym_hdr{};
  GElf_Shdr symtab_hdr{};
  for (Elf_Scn* scn = elf_nextscn(h.elf, nullptr); scn != nullptr;
       scn = elf_nextscn(h.elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* name = elf_strptr(h.elf, shstrndx, shdr.sh_name);
    if (name != nullptr && *name != '\0') {
      out->sections_.emplace(name, Section{shdr.sh_addr, shdr.sh_size, shdr.sh_offset,
                                           shdr.sh_type == SHT_NOBITS});
    }
    if (shdr.sh_type == SHT_DYNSYM) {
      dynsym = scn;
      dynsym_hdr = shdr;
    } else if (shdr.sh_type == SHT_SYMTAB) {
      symtab = scn;
      symtab_hdr = shdr;
    }
  }
  if (dynsym != nullptr) index_symbols(h.elf, dynsym, dynsym_hdr, out->dynsym_);
  if (symtab != nullptr) index_symbols(h.elf, symtab, symtab_hdr, out->symtab_);
  return out;
}

std::optional<ElfSymbols::Sym> ElfSymbols::symbol(std::string_view name) const {
  if (auto it = dynsym_.find(name); it != dynsym_.end()) return it->second;
  if (auto it = symtab_.find(name); it != symtab_.end()) return it->second;
  return std::nullopt;
}

std::optional<ElfSymbols::Section> ElfSymbols::section(std::string_view name) const {
  if (auto it = sections_.find(name); it != sections_.end()) return it->second;
  return std::nullopt;
}

std::size_t ElfSymbols::read_vaddr(std::uint64_t vaddr, void* buf, std::size_t len) const {
  for (const auto& l : loads_) {
    if (vaddr < l.vaddr || vaddr >= l.vaddr + l.filesz) continue;
    std::uint64_t avail = l.vaddr + l.filesz - vaddr;
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(len, avail));
    int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t got = pread(fd, buf, n, static_cast<off_t>(l.offset + (vaddr - l.vaddr)));
    close(fd);
    return got > 0 ? static_cast<std::size_t>(got) : 0;
  }
  return 0;
}

std::optional<std::uint64_t> compute_load_bias(const std::vector<Mapping>& mappings,
                                               const std::string& module,
                                               const std::vector<ElfSymbols::Load>& loads) {
  // The mapping that holds a PT_LOAD's first page gives start - page(vaddr). The lowest such
  // mapping is used: later ones may have been split or re-protected (RELRO).
  std::optional<std::uint64_t> best;
  std::uint64_t best_start = UINT64_MAX;
  for (const auto& m : mappings) {
    if (m.path != module || m.start >= best_start) continue;
    for (const auto& l : loads) {
      if ((l.offset & kPageMask) != m.offset) continue;
      best = m.start - (l.vaddr & kPageMask);
      best_start = m.start;
      break;
    }
  }
  return best;
}

std::vector<std::string> ModuleSymbols::modules() const {
  std::vector<std::string> out;
  for (const auto& m : target_.mappings()) {
    if (!m.is_file()) continue;
    if (std::find(out.begin(), out.end(), m.path) == out.end()) out.push_back(m.path);
  }
  return out;
}

const ElfSymbols* ModuleSymbols::elf(const std::string& module) {
  auto it = files_.find(module);
  if (it != files_.end()) return it->second.get();
  std::unique_ptr<ElfSymbols> opened;
  for (const auto& m : target_.mappings()) {
    if (m.path != module) continue;
    if (auto local = target_.local_path(m)) opened = ElfSymbols::open(*local);
    break;
  }
  auto* raw = opened.get();
  files_.emplace(module, std::move(opened));
  return raw;
}

std::optional<std::uint64_t> ModuleSymbols::load_bias(const std::string& module) {
  const ElfSymbols* e = elf(module);
  if (e == nullptr) return std::nullopt;
  return compute_load_bias(target_.mappings(), module, e->loads());
}

std::optional<SymbolAddress> ModuleSymbols::find(std::string_view name,
                                                 std::string_view module_filter) {
  for (const auto& module : modules()) {
    if (!module_filter.empty() && module.find(module_filter) == std::string::npos) continue;
    const ElfSymbols* e = elf(module);
    if (e == nullptr) continue;
    auto sym = e->symbol(name);
    if (!sym) continue;
    auto bias = load_bias(module);
    if (!bias) continue;
    return SymbolAddress{sym->value + *bias, sym->size, module};
  }
  return std::nullopt;
}

std::optional<SectionRange> ModuleSymbols::section(const std::string& module,
                                                   std::string_view name) {
  const ElfSymbols* e = elf(module);
  if (e == nullptr) return std::nullopt;
  auto sec = e->section(name);
  if (!sec || sec->addr == 0) return std::nullopt;
  auto bias = load_bias(module);
  if (!bias) return std::nullopt;
  return SectionRange{sec->addr + *bias, sec->size, module};
}

std::size_t ModuleSymbols::read_from_file(const std::string& module, std::uint64_t addr,
                                          void* buf, std::size_t len) {
  const ElfSymbols* e = elf(module);
  auto bias = load_bias(module);
  if (e == nullptr || !bias || addr < *bias) return 0;
  return e->read_vaddr(addr - *bias, buf, len);
}

std::optional<SymbolAddress> find_symbol(Target& t, std::string_view name,
                                         std::string_view module_filter) {
  ModuleSymbols syms(t);
  return syms.find(name, module_filter);
}

std::optional<SectionRange> find_section(Target& t, const std::string& module,
                                         std::string_view name) {
  ModuleSymbols syms(t);
  return syms.section(module, name);
}

}  // namespace hangscan
