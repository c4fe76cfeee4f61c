// Symbol and section lookup in the ELF files a target has mapped.
//
// Why: the Python locator (and others: libc's `environ`, NCCL/gloo state) need the runtime
// address of a named symbol or section in the executable or a shared library, without debug
// info and without calling into the target. This reads .dynsym/.symtab and section headers
// from the files on disk (Target::local_path, so cores with a sysroot work too) and adds the
// load bias computed from the module's mappings (PIE, non-PIE ET_EXEC and shared libraries).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "target/target.h"

struct Elf;  // libelf

namespace hangscan {

struct SymbolAddress {
  std::uint64_t address = 0;  // absolute, in the target's address space
  std::uint64_t size = 0;
  std::string module;  // path of the module (as in the mappings)
};

// A runtime address range of one section of one module.
struct SectionRange {
  std::uint64_t start = 0;
  std::uint64_t size = 0;
  std::string module;
  bool contains(std::uint64_t a) const { return a >= start && a < start + size; }
};

// One ELF file opened from disk (mapped, not read), its symbols looked up by name on demand.
// Why on demand: a torch process maps ~300 files and every core of a job asks for a handful
// of names (_PyRuntime, Py_Version, environ); indexing every symbol of each file it opened
// cost more than the lookups. .dynsym is searched through its GNU hash table, .symtab (and
// .dynsym without one) by a scan, and answers are remembered.
class ElfSymbols {
 public:
  // nullptr when the file cannot be opened or is not ELF.
  static std::unique_ptr<ElfSymbols> open(const std::string& local_path);
  ~ElfSymbols();
  ElfSymbols(const ElfSymbols&) = delete;
  ElfSymbols& operator=(const ElfSymbols&) = delete;

  struct Sym {
    std::uint64_t value = 0;
    std::uint64_t size = 0;
  };
  struct Section {
    std::uint64_t addr = 0;
    std::uint64_t size = 0;
    std::uint64_t file_offset = 0;
    bool nobits = false;
  };
  struct Load {
    std::uint64_t vaddr = 0;
    std::uint64_t offset = 0;
    std::uint64_t filesz = 0;
    std::uint64_t memsz = 0;
  };

  bool is_exec() const { return is_exec_; }  // ET_EXEC: not relocated
  // The first definition of `name` (function, object, TLS, ifunc or untyped) in .dynsym,
  // else in .symtab.
  std::optional<Sym> symbol(std::string_view name) const;
  std::optional<Section> section(std::string_view name) const;
  const std::vector<Load>& loads() const { return loads_; }
  // Reads bytes at a link-time virtual address from the file (for read-only data that a
  // core may not contain). Returns the number of bytes read.
  std::size_t read_vaddr(std::uint64_t vaddr, void* buf, std::size_t len) const;

 private:
  struct Table {
    std::size_t index = 0;   // section index of the symbol table, 0: none
    std::size_t strtab = 0;  // its string table's
  };
  ElfSymbols() = default;
  std::optional<Sym> from_gnu_hash(std::string_view name) const;
  std::optional<Sym> scan(const Table& table, std::string_view name) const;

  std::string path_;
  int fd_ = -1;
  Elf* elf_ = nullptr;
  bool is_exec_ = false;
  Table dynsym_;
  Table symtab_;
  std::size_t gnu_hash_ = 0;  // section index of .gnu.hash, 0: none
  std::map<std::string, Section, std::less<>> sections_;
  std::vector<Load> loads_;
  mutable std::map<std::string, std::optional<Sym>, std::less<>> looked_up_;
};

// Symbol lookup over every file-backed module of one target, caching opened files.
class ModuleSymbols {
 public:
  explicit ModuleSymbols(Target& target) : target_(target) {}

  // Paths of the file-backed modules, in mapping order, without duplicates.
  std::vector<std::string> modules() const;
  // Load bias of `module` (runtime address = link-time address + bias); nullopt if not mapped
  // or the file is unreadable.
  std::optional<std::uint64_t> load_bias(const std::string& module);
  // First match in .dynsym, then .symtab, of each module whose path contains `module_filter`.
  std::optional<SymbolAddress> find(std::string_view name, std::string_view module_filter = {});
  std::optional<SectionRange> section(const std::string& module, std::string_view name);
  // Reads runtime address `addr` of `module` from the file on disk.
  std::size_t read_from_file(const std::string& module, std::uint64_t addr, void* buf,
                             std::size_t len);
  // The opened ELF file of a module (cached); nullptr when unreadable.
  const ElfSymbols* elf(const std::string& module);

 private:
  Target& target_;
  std::map<std::string, std::unique_ptr<ElfSymbols>> files_;  // null: open failed
  std::map<std::string, std::optional<std::uint64_t>> biases_;
};

// Convenience: one lookup without keeping a cache.
std::optional<SymbolAddress> find_symbol(Target& t, std::string_view name,
                                         std::string_view module_filter = {});
std::optional<SectionRange> find_section(Target& t, const std::string& module,
                                         std::string_view name);

// Load bias from a module's mappings and its PT_LOAD headers; exposed for tests.
std::optional<std::uint64_t> compute_load_bias(const std::vector<Mapping>& mappings,
                                               const std::string& module,
                                               const std::vector<ElfSymbols::Load>& loads);

}  // namespace hangscan
