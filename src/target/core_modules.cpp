#include "target/core_modules.h"
#include "proc/target_file.h"
#include "util/diagnostic.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <fmt/core.h>

namespace hangscan {
namespace {

constexpr std::size_t kMaxPhnum = 512;
constexpr std::size_t kMaxNoteBytes = 64 * 1024;
constexpr std::size_t kListedInSummary = 3;

std::string hex(const std::uint8_t* p, std::size_t n) {
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) out += fmt::format("{:02x}", p[i]);
  return out;
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string basename_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string short_id(const std::string& id) { return id.substr(0, 12); }

// The program headers of an ELF image, from whatever reader holds its first bytes.
template <class ReadAt>
std::optional<std::vector<Elf64_Phdr>> read_phdrs(ReadAt read_at, Elf64_Ehdr& eh) {
  if (!read_at(0, &eh, sizeof(eh))) return std::nullopt;
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) {
    return std::nullopt;
  }
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > kMaxPhnum) {
    return std::nullopt;
  }
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!read_at(eh.e_phoff, ph.data(), ph.size() * sizeof(Elf64_Phdr))) return std::nullopt;
  return ph;
}

}  // namespace

std::optional<std::string> find_gnu_build_id(const std::uint8_t* notes, std::size_t size) {
  std::size_t pos = 0;
  while (size - pos >= 12) {
    std::uint32_t namesz, descsz, type;
    std::memcpy(&namesz, notes + pos, 4);
    std::memcpy(&descsz, notes + pos + 4, 4);
    std::memcpy(&type, notes + pos + 8, 4);
    std::uint64_t name_at = pos + 12;
    std::uint64_t desc_at = name_at + ((std::uint64_t{namesz} + 3) & ~std::uint64_t{3});
    if (desc_at > size || size - desc_at < descsz) return std::nullopt;
    if (type == NT_GNU_BUILD_ID && namesz == 4 && std::memcmp(notes + name_at, "GNU", 4) == 0 &&
        descsz > 0) {
      return hex(notes + desc_at, descsz);
    }
    pos = static_cast<std::size_t>(desc_at + ((std::uint64_t{descsz} + 3) & ~std::uint64_t{3}));
    if (pos > size) break;
  }
  return std::nullopt;
}

std::optional<std::string> build_id_of_file(const std::string& path) {
  int fd = open_regular_file(path);
  if (fd < 0) return std::nullopt;
  auto read_at = [fd](std::uint64_t off, void* buf, std::size_t len) {
    return pread(fd, buf, len, static_cast<off_t>(off)) == static_cast<ssize_t>(len);
  };
  std::optional<std::string> out;
  Elf64_Ehdr eh{};
  if (auto phdrs = read_phdrs(read_at, eh)) {
    for (const auto& ph : *phdrs) {
      if (ph.p_type != PT_NOTE || ph.p_filesz == 0 || ph.p_filesz > kMaxNoteBytes) continue;
      std::vector<std::uint8_t> buf(ph.p_filesz);
      if (!read_at(ph.p_offset, buf.data(), buf.size())) continue;
      out = find_gnu_build_id(buf.data(), buf.size());
      if (out) break;
    }
  }
  ::close(fd);
  return out;
}

std::optional<std::string> build_id_in_memory(MemoryReader& mem, std::uint64_t start) {
  auto read_at = [&mem, start](std::uint64_t off, void* buf, std::size_t len) {
    return mem.read_exact(start + off, buf, len);
  };
  Elf64_Ehdr eh{};
  auto phdrs = read_phdrs(read_at, eh);
  if (!phdrs) return std::nullopt;
  // The mapping at file offset 0 holds the first PT_LOAD; that fixes the load bias.
  std::optional<std::uint64_t> first_vaddr;
  for (const auto& ph : *phdrs) {
    if (ph.p_type == PT_LOAD) {
      first_vaddr = ph.p_vaddr & ~std::uint64_t{0xfff};
      break;
    }
  }
  if (!first_vaddr) return std::nullopt;
  std::uint64_t bias = start - *first_vaddr;
  for (const auto& ph : *phdrs) {
    if (ph.p_type != PT_NOTE || ph.p_memsz == 0 || ph.p_memsz > kMaxNoteBytes) continue;
    std::vector<std::uint8_t> buf(ph.p_memsz);
    if (!mem.read_exact(bias + ph.p_vaddr, buf.data(), buf.size())) continue;
    if (auto id = find_gnu_build_id(buf.data(), buf.size())) return id;
  }
  return std::nullopt;
}

ModuleFileCache::Info ModuleFileCache::get(const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = files_.find(path); it != files_.end()) return it->second;
  }
  Info info;
  info.regular = is_regular_file(path);
  if (info.regular) info.build_id = build_id_of_file(path).value_or("");
  std::lock_guard<std::mutex> lock(mu_);
  return files_.emplace(path, std::move(info)).first->second;
}

std::vector<std::string> CoreModules::candidates(const std::string& core_path) const {
  std::vector<std::string> out;
  // Files under /proc, /sys and /dev are never modules, and some block when read
  // (/proc/kmsg): a hostile core must not be able to make hangscan hang.
  for (const char* pseudo : {"/proc/", "/sys/", "/dev/"}) {
    if (core_path.starts_with(pseudo)) return out;
  }
  if (!sysroot_.empty()) out.push_back(sysroot_ + core_path);
  for (const auto& dir : lib_paths_) out.push_back(dir + "/" + basename_of(core_path));
  out.push_back(core_path);
  return out;
}

ResolvedModule CoreModules::resolve(const std::string& core_path,
                                    const std::optional<std::string>& core_id,
                                    const std::string& override_path) {
  ResolvedModule r;
  r.core_build_id = core_id.value_or("");
  r.is_elf = core_id.has_value();
  std::vector<std::string> cands =
      override_path.empty() ? candidates(core_path) : std::vector<std::string>{override_path};
  std::optional<std::pair<std::string, std::string>> first;  // path, build-id
  for (const auto& c : cands) {
    ModuleFileCache::Info file = files_->get(c);
    if (!file.regular) continue;
    const std::string& id = file.build_id;
    if (!id.empty()) r.is_elf = true;
    if (core_id && id == *core_id) {
      r.local = c;
      r.file_build_id = id;
      return r;
    }
    if (!first) first.emplace(c, id);
  }
  if (first) {
    r.local = first->first;
    r.file_build_id = first->second;
  }
  return r;
}

void CoreModules::resolve_all(const std::vector<Mapping>& mappings, MemoryReader& core_memory,
                              const std::string& exe_core_path, const std::string& exe_override) {
  // The ELF header of each module is at its mapping with file offset 0.
  std::map<std::string, std::optional<std::uint64_t>> header_at;
  for (const auto& m : mappings) {
    if (!m.is_file()) continue;
    auto& slot = header_at[m.path];
    if (m.offset == 0 && !slot) slot = m.start;
  }
  std::vector<std::string> missing;
  std::vector<std::string> mismatched;
  for (const auto& [path, start] : header_at) {
    std::optional<std::string> core_id;
    if (start) core_id = build_id_in_memory(core_memory, *start);
    bool is_exe = path == exe_core_path;
    ResolvedModule r = resolve(path, core_id, is_exe ? exe_override : std::string());
    if (!r.local && (r.is_elf || is_exe)) {
      missing.push_back(path);
    } else if (r.local && !r.core_build_id.empty() && !r.file_build_id.empty() &&
               r.core_build_id != r.file_build_id) {
      mismatched.push_back(fmt::format("{} (core {}, file {} {})", path, short_id(r.core_build_id),
                                       *r.local, short_id(r.file_build_id)));
    }
    modules_.emplace(path, std::move(r));
  }
  if (!exe_core_path.empty() &&
      std::find(missing.begin(), missing.end(), exe_core_path) != missing.end()) {
    diagnostics_.push_back(
        make_diagnostic(Diagnostic::Severity::warning,
                        fmt::format("executable {} not found on this machine", exe_core_path),
                        "give it with --exe PATH (or the machine's root with --sysroot DIR)"));
    missing.erase(std::find(missing.begin(), missing.end(), exe_core_path));
  }
  auto summarize = [](const std::vector<std::string>& items) {
    std::string s;
    for (std::size_t i = 0; i < items.size() && i < kListedInSummary; ++i) {
      s += (i ? ", " : "") + items[i];
    }
    if (items.size() > kListedInSummary)
      s += fmt::format(" and {} more", items.size() - kListedInSummary);
    return s;
  };
  if (!missing.empty()) {
    diagnostics_.push_back(make_diagnostic(
        Diagnostic::Severity::warning,
        fmt::format("{} librar{} mapped in the core not found on this machine: {}", missing.size(),
                    missing.size() == 1 ? "y" : "ies", summarize(missing)),
        "frames in them show as ??; give the crashed machine's files with --sysroot DIR or "
        "--lib-path DIR"));
  }
  if (!mismatched.empty()) {
    diagnostics_.push_back(make_diagnostic(
        Diagnostic::Severity::warning,
        fmt::format("build-id mismatch for {} file{}: {}", mismatched.size(),
                    mismatched.size() == 1 ? "" : "s", summarize(mismatched)),
        "these files are not the ones the process ran; symbols and stacks in them may be "
        "wrong; give the right ones with --sysroot DIR, --lib-path DIR or --exe PATH"));
  }
}

std::optional<std::string> CoreModules::local_path(const std::string& core_path) const {
  if (const ResolvedModule* r = find(core_path)) return r->local;
  return std::nullopt;
}

const ResolvedModule* CoreModules::find(const std::string& core_path) const {
  auto it = modules_.find(core_path);
  return it == modules_.end() ? nullptr : &it->second;
}

}  // namespace hangscan
