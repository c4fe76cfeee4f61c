#include "target/symbol_lookup.h"
#include "proc/target_file.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>

namespace hangscan {
namespace {

constexpr std::uint64_t kPageMask = ~std::uint64_t{0xfff};

bool acceptable(const GElf_Sym& sym) {
  if (sym.st_shndx == SHN_UNDEF || sym.st_name == 0) return false;
  int type = GELF_ST_TYPE(sym.st_info);
  return type == STT_OBJECT || type == STT_FUNC || type == STT_TLS || type == STT_NOTYPE ||
         type == STT_GNU_IFUNC;
}

// The hash of the GNU hash table (ld.so's dl_new_hash).
std::uint32_t gnu_hash(std::string_view name) {
  std::uint32_t h = 5381;
  for (unsigned char c : name) h = h * 33 + c;
  return h;
}

}  // namespace

ElfSymbols::~ElfSymbols() {
  if (elf_ != nullptr) elf_end(elf_);
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<ElfSymbols> ElfSymbols::open(const std::string& local_path) {
  if (elf_version(EV_CURRENT) == EV_NONE) return nullptr;
  auto out = std::unique_ptr<ElfSymbols>(new ElfSymbols());
  out->path_ = local_path;
  out->fd_ = open_regular_file(local_path);
  if (out->fd_ < 0) return nullptr;
  out->elf_ = elf_begin(out->fd_, ELF_C_READ_MMAP, nullptr);
  Elf* elf = out->elf_;
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) return nullptr;
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf, &ehdr) == nullptr) return nullptr;
  out->is_exec_ = ehdr.e_type == ET_EXEC;

  std::size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) == 0) {
    for (std::size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr) continue;
      if (ph.p_type != PT_LOAD) continue;
      out->loads_.push_back(Load{ph.p_vaddr, ph.p_offset, ph.p_filesz, ph.p_memsz});
    }
  }

  std::size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return out;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (name != nullptr && *name != '\0') {
      out->sections_.emplace(
          name, Section{shdr.sh_addr, shdr.sh_size, shdr.sh_offset, shdr.sh_type == SHT_NOBITS});
    }
    Table t{elf_ndxscn(scn), shdr.sh_link};
    if (shdr.sh_type == SHT_DYNSYM && out->dynsym_.index == 0) out->dynsym_ = t;
    if (shdr.sh_type == SHT_SYMTAB && out->symtab_.index == 0) out->symtab_ = t;
    if (shdr.sh_type == SHT_GNU_HASH && out->gnu_hash_ == 0) out->gnu_hash_ = elf_ndxscn(scn);
  }
  return out;
}

std::optional<ElfSymbols::Sym> ElfSymbols::scan(const Table& table, std::string_view name) const {
  if (table.index == 0) return std::nullopt;
  Elf_Scn* scn = elf_getscn(elf_, table.index);
  GElf_Shdr shdr;
  if (scn == nullptr || gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_entsize == 0)
    return std::nullopt;
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr) return std::nullopt;
  std::size_t count = shdr.sh_size / shdr.sh_entsize;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
    if (!acceptable(sym)) continue;
    const char* n = elf_strptr(elf_, table.strtab, sym.st_name);
    if (n != nullptr && name == n) return Sym{sym.st_value, sym.st_size};
  }
  return std::nullopt;
}

std::optional<ElfSymbols::Sym> ElfSymbols::from_gnu_hash(std::string_view name) const {
  // Layout: nbuckets, symoffset, bloom words, bloom shift; bloom[]; buckets[]; chain[].
  Elf_Scn* hscn = elf_getscn(elf_, gnu_hash_);
  Elf_Data* hash = hscn != nullptr ? elf_rawdata(hscn, nullptr) : nullptr;
  Elf_Scn* sscn = elf_getscn(elf_, dynsym_.index);
  Elf_Data* syms = sscn != nullptr ? elf_getdata(sscn, nullptr) : nullptr;
  if (hash == nullptr || syms == nullptr || hash->d_buf == nullptr || hash->d_size < 16) {
    return scan(dynsym_, name);
  }
  const auto* bytes = static_cast<const std::uint8_t*>(hash->d_buf);
  auto word = [bytes](std::size_t at) {
    std::uint32_t v;
    std::memcpy(&v, bytes + at, 4);
    return v;
  };
  std::uint64_t nbuckets = word(0);
  std::uint64_t symoffset = word(4);
  std::uint64_t bloom_words = word(8);
  std::uint64_t buckets_at = 16 + bloom_words * 8;
  std::uint64_t chain_at = buckets_at + nbuckets * 4;
  if (nbuckets == 0 || chain_at > hash->d_size) return scan(dynsym_, name);
  std::uint64_t chain_len = (hash->d_size - chain_at) / 4;
  std::uint32_t h = gnu_hash(name);
  std::uint64_t idx = word(static_cast<std::size_t>(buckets_at + (h % nbuckets) * 4));
  if (idx < symoffset) return std::nullopt;
  for (; idx - symoffset < chain_len; ++idx) {
    std::uint32_t ch = word(static_cast<std::size_t>(chain_at + (idx - symoffset) * 4));
    if ((ch | 1) == (h | 1)) {
      GElf_Sym sym;
      if (gelf_getsym(syms, static_cast<int>(idx), &sym) == nullptr) break;
      const char* n = acceptable(sym) ? elf_strptr(elf_, dynsym_.strtab, sym.st_name) : nullptr;
      if (n != nullptr && name == n) return Sym{sym.st_value, sym.st_size};
    }
    if (ch & 1) break;  // the end of this bucket's chain
  }
  return std::nullopt;
}

std::optional<ElfSymbols::Sym> ElfSymbols::symbol(std::string_view name) const {
  if (auto it = looked_up_.find(name); it != looked_up_.end()) return it->second;
  std::optional<Sym> found =
      gnu_hash_ != 0 && dynsym_.index != 0 ? from_gnu_hash(name) : scan(dynsym_, name);
  if (!found) found = scan(symtab_, name);
  looked_up_.emplace(std::string(name), found);
  return found;
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
    ssize_t got = pread(fd_, buf, n, static_cast<off_t>(l.offset + (vaddr - l.vaddr)));
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
  std::unordered_set<std::string_view> seen;
  for (const auto& m : target_.mappings()) {
    if (m.is_file() && seen.insert(m.path).second) out.push_back(m.path);
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
  if (auto it = biases_.find(module); it != biases_.end()) return it->second;
  const ElfSymbols* e = elf(module);
  std::optional<std::uint64_t> bias;
  if (e != nullptr) bias = compute_load_bias(target_.mappings(), module, e->loads());
  biases_.emplace(module, bias);
  return bias;
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

std::size_t ModuleSymbols::read_from_file(const std::string& module, std::uint64_t addr, void* buf,
                                          std::size_t len) {
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
