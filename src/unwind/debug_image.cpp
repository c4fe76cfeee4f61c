#include "unwind/debug_image.h"

#include <dlfcn.h>
#include <elf.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "proc/target_file.h"
#include "target/core_modules.h"
#include "util/parse_number.h"

namespace hangscan {
namespace {

// What names, file:line and inline scopes read. Location lists, macros, call frames and the
// name indexes are left out: they are the bulk of a debug file and symbolizing never reads them.
constexpr std::array<std::string_view, 11> kKept = {
    ".debug_info", ".debug_abbrev",      ".debug_line",   ".debug_line_str",
    ".debug_str",  ".debug_aranges",     ".debug_ranges", ".debug_rnglists",
    ".debug_addr", ".debug_str_offsets", ".debug_types"};

constexpr std::uint64_t kMaxImage = std::uint64_t{4} << 30;  // a bigger claim is corrupt
constexpr std::size_t kGnuHeader = 12;                       // "ZLIB" + 8-byte BE size
constexpr std::uint64_t kParallelBytes = 1 << 20;            // less is not worth a thread

enum class Packing { plain, chdr, gnu };

// libdw's own answer to a failed allocation inside a Dwarf is to print "libdw: Cannot
// allocate memory" and exit the process. Ours: std::bad_alloc, which the caller turns into
// "no file:line for this module: out of memory" and the Dwarf is never touched again.
// GNU form: noreturn in the function type, as libdw's Dwarf_OOM pointer type has it (clang checks).
__attribute__((noreturn)) void throw_out_of_memory() { throw std::bad_alloc(); }

// Room libdw's own structures need beside the sections (CU and abbreviation tables, line
// programs): it cannot fail gracefully inside them (an assertion in its hash table aborts the
// process, its allocator exits), so a DWARF is not opened without this much address space.
constexpr std::uint64_t kLibdwRoom = std::uint64_t{16} << 20;

// Address space left under RLIMIT_AS (`ulimit -v`); UINT64_MAX without a limit.
std::uint64_t address_space_left() {
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  char text[64] = {};  // "VMSIZE RSS ..." in pages
  int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  ssize_t got = fd >= 0 ? ::read(fd, text, sizeof(text) - 1) : -1;
  if (fd >= 0) ::close(fd);
  std::string_view view(text, got > 0 ? static_cast<std::size_t>(got) : 0);
  std::uint64_t used =
      take_int<std::uint64_t>(view).value_or(0) * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  return rl.rlim_cur > used ? rl.rlim_cur - used : 0;
}

// std::bad_alloc unless `bytes` more and libdw's room fit under the limit.
void require_room(std::uint64_t bytes) {
  if (address_space_left() < bytes + kLibdwRoom) throw std::bad_alloc();
}

// dwarf_begin_elf() for an image; std::bad_alloc when it failed for lack of memory.
Dwarf* begin_dwarf(Elf* elf) {
  errno = 0;
  Dwarf* dw = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);
  if (dw == nullptr && errno == ENOMEM) throw std::bad_alloc();
  if (dw != nullptr) dwarf_new_oom_handler(dw, throw_out_of_memory);
  return dw;
}

struct Piece {
  std::string name;  // ".debug_*" even for ".zdebug_*"
  Elf_Scn* scn = nullptr;
  Packing packing = Packing::plain;
  std::uint64_t size = 0;            // inflated
  std::uint64_t offset = 0;          // in the image
  const std::uint8_t* in = nullptr;  // the bytes in the file (compressed or not)
  std::size_t in_size = 0;
  bool done = false;
};

std::uint64_t align_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

bool kept(std::string_view name) {
  for (auto k : kKept) {
    if (k == name) return true;
  }
  return false;
}

// The compressed stream of a section and its inflated size, from its raw bytes.
bool compressed_stream(Elf_Scn* scn, Packing packing, const std::uint8_t** in, std::size_t* in_size,
                       std::uint64_t* out_size) {
  Elf_Data* raw = elf_rawdata(scn, nullptr);
  if (raw == nullptr || raw->d_buf == nullptr) return false;
  const auto* p = static_cast<const std::uint8_t*>(raw->d_buf);
  std::size_t n = raw->d_size;
  if (packing == Packing::chdr) {
    Elf64_Chdr ch;
    if (n < sizeof(ch)) return false;
    std::memcpy(&ch, p, sizeof(ch));
    if (ch.ch_type != ELFCOMPRESS_ZLIB) return false;
    *in = p + sizeof(ch);
    *in_size = n - sizeof(ch);
    *out_size = ch.ch_size;
    return true;
  }
  if (n < kGnuHeader || std::memcmp(p, "ZLIB", 4) != 0) return false;
  std::uint64_t size = 0;
  for (int i = 4; i < 12; ++i) size = (size << 8) | p[i];
  *in = p + kGnuHeader;
  *in_size = n - kGnuHeader;
  *out_size = size;
  return true;
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool has_section(Elf* elf, std::string_view wanted) {
  std::size_t shstrndx = 0;
  if (elf == nullptr || elf_getshdrstrndx(elf, &shstrndx) != 0) return false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (name != nullptr && wanted == name) return true;
  }
  return false;
}

std::string module_build_id(Dwfl_Module* mod) {
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  int len = dwfl_module_build_id(mod, &bits, &vaddr);
  std::string out;
  for (int i = 0; i < len; ++i) out += fmt::format("{:02x}", bits[i]);
  return out;
}

}  // namespace

std::optional<std::string> find_debug_file(const std::string& module_path,
                                           const std::string& build_id, const char* debuglink) {
  if (build_id.size() > 2) {
    std::string p = fmt::format("/usr/lib/debug/.build-id/{}/{}.debug", build_id.substr(0, 2),
                                build_id.substr(2));
    if (is_regular_file(p)) return p;
  }
  if (debuglink == nullptr || *debuglink == '\0' || std::strchr(debuglink, '/') != nullptr) {
    return std::nullopt;
  }
  std::vector<std::string> dirs;
  auto add_dirs_of = [&dirs](const std::string& file) {
    auto slash = file.rfind('/');
    if (slash == std::string::npos) return;
    std::string dir = file.substr(0, slash);
    for (const std::string& d : {dir, dir + "/.debug", "/usr/lib/debug" + dir}) {
      if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
    }
  };
  add_dirs_of(module_path);
  if (char* real = realpath(module_path.c_str(), nullptr)) {
    add_dirs_of(real);
    std::free(real);
  }
  for (const auto& d : dirs) {
    std::string p = d + "/" + debuglink;
    if (p == module_path || !is_regular_file(p)) continue;
    if (!build_id.empty()) {
      auto id = build_id_of_file(p);
      if (id && *id != build_id) continue;
    }
    return p;
  }
  return std::nullopt;
}

int find_debuginfo_local(Dwfl_Module* mod, void** /*userdata*/, const char* /*modname*/,
                         Dwarf_Addr /*base*/, const char* file_name, const char* debuglink_file,
                         GElf_Word /*debuglink_crc*/, char** debuginfo_file_name) {
  auto path =
      find_debug_file(file_name != nullptr ? file_name : "", module_build_id(mod), debuglink_file);
  if (!path) {
    errno = ENOENT;
    return -1;
  }
  int fd = open_regular_file(*path);
  if (fd >= 0 && debuginfo_file_name != nullptr) *debuginfo_file_name = strdup(path->c_str());
  return fd;
}

std::optional<std::string> dwarf_file_of(Dwfl_Module* mod) {
  GElf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(mod, &bias);
  if (elf == nullptr) return std::nullopt;
  const char* main_file = nullptr;
  dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, &main_file, nullptr);
  if (main_file == nullptr) return std::nullopt;
  if (has_section(elf, ".debug_info") || has_section(elf, ".zdebug_info")) return main_file;
  GElf_Word crc = 0;
  return find_debug_file(main_file, module_build_id(mod), dwelf_elf_gnu_debuglink(elf, &crc));
}

Inflater::Inflater(bool use_libdeflate) {
  if (!use_libdeflate) return;
  lib_ = dlopen("libdeflate.so.0", RTLD_LAZY | RTLD_LOCAL);
  if (lib_ == nullptr) return;
  alloc_ = reinterpret_cast<AllocFn>(dlsym(lib_, "libdeflate_alloc_decompressor"));
  free_ = reinterpret_cast<FreeFn>(dlsym(lib_, "libdeflate_free_decompressor"));
  zlib_decompress_ = reinterpret_cast<ZlibFn>(dlsym(lib_, "libdeflate_zlib_decompress"));
  if (alloc_ == nullptr || free_ == nullptr || zlib_decompress_ == nullptr) alloc_ = nullptr;
}

Inflater::~Inflater() {
  if (lib_ != nullptr) dlclose(lib_);
}

bool Inflater::inflate(const void* in, std::size_t in_size, void* out, std::size_t out_size) const {
  if (alloc_ == nullptr) return false;
  // One decompressor per call (a few KB): calls may run on several threads at once.
  void* d = alloc_();
  if (d == nullptr) return false;
  std::size_t actual = 0;
  // LIBDEFLATE_SUCCESS is 0; the output must be exactly the size the header promised.
  bool ok = zlib_decompress_(d, in, in_size, out, out_size, &actual) == 0 && actual == out_size;
  free_(d);
  return ok;
}

DebugImage::~DebugImage() {
  if (dwarf_ != nullptr) dwarf_end(dwarf_);
  if (image_elf_ != nullptr) elf_end(static_cast<Elf*>(image_elf_));
  if (source_ != nullptr) elf_end(static_cast<Elf*>(source_));
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<DebugImage> DebugImage::open(const std::string& path, const Inflater& inflater) {
  // libelf and libdw fail by returning null with malloc's ENOMEM in errno: a module whose
  // DWARF did not fit must be told from one that has none.
  errno = 0;
  auto image = open_image(path, inflater);
  if (image == nullptr && errno == ENOMEM) throw std::bad_alloc();
  return image;
}

std::unique_ptr<DebugImage> DebugImage::open_image(const std::string& path,
                                                   const Inflater& inflater) {
  if (elf_version(EV_CURRENT) == EV_NONE) return nullptr;
  std::unique_ptr<DebugImage> img(new DebugImage());
  img->fd_ = open_regular_file(path);
  if (img->fd_ < 0) return nullptr;
  Elf* elf = elf_begin(img->fd_, ELF_C_READ_MMAP, nullptr);
  img->source_ = elf;
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) return nullptr;
  GElf_Ehdr eh;
  std::size_t shstrndx = 0;
  if (gelf_getehdr(elf, &eh) == nullptr || elf_getshdrstrndx(elf, &shstrndx) != 0) return nullptr;

  std::vector<Piece> pieces;
  bool has_info = false;
  bool compressed = false;
  bool alt = false;  // dwz: DIEs in another file, which libdw finds from the file's path
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    const char* raw_name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (raw_name == nullptr) continue;
    std::string_view name(raw_name);
    if (name == ".gnu_debugaltlink" || name == ".debug_sup") alt = true;
    bool gnu = name.starts_with(".zdebug_");
    std::string canonical = gnu ? ".debug_" + std::string(name.substr(8)) : std::string(name);
    if (!std::string_view(canonical).starts_with(".debug_") || sh.sh_type == SHT_NOBITS) continue;
    Packing packing = gnu                              ? Packing::gnu
                      : (sh.sh_flags & SHF_COMPRESSED) ? Packing::chdr
                                                       : Packing::plain;
    compressed |= packing != Packing::plain;
    if (canonical == ".debug_info") has_info = true;
    if (!kept(canonical)) continue;
    if (std::any_of(pieces.begin(), pieces.end(),
                    [&](const Piece& p) { return p.name == canonical; })) {
      continue;  // a duplicate section: libdw would refuse the file; keep the first
    }
    pieces.push_back(Piece{std::move(canonical), scn, packing, sh.sh_size, 0});
  }
  if (!has_info) return nullptr;

  // Nothing to inflate, or a layout this does not rebuild: libdw reads the file itself.
  bool native = eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_ident[EI_DATA] == ELFDATA2LSB;
  auto plain = [&img, elf]() -> std::unique_ptr<DebugImage> {
    require_room(0);  // the file is mapped already
    img->dwarf_ = begin_dwarf(elf);
    if (img->dwarf_ == nullptr) return nullptr;
    return std::move(img);
  };
  if (!compressed || alt || !native || eh.e_type == ET_REL) return plain();

  // Sizes first: the image is ELF header, section headers, names, then the sections.
  std::string names(1, '\0');
  std::vector<std::uint32_t> name_at;
  for (auto& p : pieces) {
    if (p.packing != Packing::plain) {
      const std::uint8_t* in = nullptr;
      std::size_t in_size = 0;
      if (!compressed_stream(p.scn, p.packing, &in, &in_size, &p.size)) return plain();
    }
    name_at.push_back(static_cast<std::uint32_t>(names.size()));
    names += p.name;
    names += '\0';
  }
  names += ".shstrtab";
  names += '\0';
  std::uint32_t shstrtab_name = static_cast<std::uint32_t>(names.size() - sizeof(".shstrtab"));
  const std::size_t shnum = pieces.size() + 2;
  std::uint64_t off = sizeof(Elf64_Ehdr) + shnum * sizeof(Elf64_Shdr);
  const std::uint64_t names_at = off;
  off += names.size();
  for (auto& p : pieces) {
    off = align_up(off, 16);
    p.offset = off;
    if (p.size > kMaxImage || off + p.size > kMaxImage) return plain();
    off += p.size;
  }
  img->image_size_ = static_cast<std::size_t>(std::max<std::uint64_t>(off, 1));
  require_room(img->image_size_);
  // Huge pages: fewer page faults while inflating tens of MB (each fault is costly in a VM).
  img->memory_ = HugeMapping(img->image_size_);
  // Not plain(): libdw would inflate every section, more than this image.
  if (!img->memory_) throw std::bad_alloc();
  img->image_ = img->memory_.data();

  Elf64_Ehdr out{};
  std::memcpy(out.e_ident, eh.e_ident, EI_NIDENT);
  out.e_type = eh.e_type;
  out.e_machine = eh.e_machine;
  out.e_version = EV_CURRENT;
  out.e_shoff = sizeof(Elf64_Ehdr);
  out.e_ehsize = sizeof(Elf64_Ehdr);
  out.e_shentsize = sizeof(Elf64_Shdr);
  out.e_shnum = static_cast<Elf64_Half>(shnum);
  out.e_shstrndx = static_cast<Elf64_Half>(shnum - 1);
  std::memcpy(img->image_, &out, sizeof(out));
  std::vector<Elf64_Shdr> shdrs(shnum);
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    Elf64_Shdr& s = shdrs[i + 1];
    s.sh_name = name_at[i];
    s.sh_type = SHT_PROGBITS;
    s.sh_offset = pieces[i].offset;
    s.sh_size = pieces[i].size;
    s.sh_addralign = 1;
  }
  Elf64_Shdr& strtab = shdrs[shnum - 1];
  strtab.sh_name = shstrtab_name;
  strtab.sh_type = SHT_STRTAB;
  strtab.sh_offset = names_at;
  strtab.sh_size = names.size();
  strtab.sh_addralign = 1;
  std::memcpy(img->image_ + sizeof(Elf64_Ehdr), shdrs.data(), shnum * sizeof(Elf64_Shdr));
  std::memcpy(img->image_ + names_at, names.data(), names.size());

  // libelf is not thread-safe: find every input first, then fill the image on two threads
  // (the largest sections spread over both), then let libelf inflate what libdeflate did not.
  for (auto& p : pieces) {
    if (p.packing == Packing::plain) {
      Elf_Data* d = elf_rawdata(p.scn, nullptr);
      if (d == nullptr || (p.size > 0 && (d->d_buf == nullptr || d->d_size != p.size)))
        return plain();
      p.in = static_cast<const std::uint8_t*>(d->d_buf);
      p.in_size = p.size;
    } else {
      std::uint64_t size = 0;
      if (!compressed_stream(p.scn, p.packing, &p.in, &p.in_size, &size)) return plain();
    }
  }
  std::uint8_t* image = img->image_;
  auto fill = [&inflater, image](Piece& p) {
    std::uint8_t* dest = image + p.offset;
    if (p.packing == Packing::plain) {
      if (p.size > 0) std::memcpy(dest, p.in, p.size);
      p.done = true;
    } else {
      p.done = inflater.inflate(p.in, p.in_size, dest, p.size);
    }
  };
  std::vector<Piece*> order;
  order.reserve(pieces.size());
  for (auto& p : pieces) order.push_back(&p);
  std::sort(order.begin(), order.end(),
            [](const Piece* a, const Piece* b) { return a->size > b->size; });
  std::vector<Piece*> mine;
  std::vector<Piece*> theirs;
  std::uint64_t my_bytes = 0;
  std::uint64_t their_bytes = 0;
  for (Piece* p : order) {
    bool to_me = my_bytes <= their_bytes;
    (to_me ? mine : theirs).push_back(p);
    (to_me ? my_bytes : their_bytes) += p->size;
  }
  std::optional<std::thread> helper;
  if (inflater.available() && their_bytes >= kParallelBytes) {
    try {
      helper.emplace([&theirs, &fill] {
        for (Piece* p : theirs) fill(*p);
      });
    } catch (const std::system_error&) {  // no thread to be had: all on this one
    }
  }
  if (helper) {
    for (Piece* p : mine) fill(*p);
    helper->join();
  } else {
    for (Piece& p : pieces) fill(p);
  }
  for (auto& p : pieces) {
    if (p.done) {
      if (p.packing != Packing::plain) img->inflated_ += p.size;
      continue;
    }
    // No libdeflate (or it refused the stream): libelf's zlib, then a copy.
    int rc = p.packing == Packing::gnu ? elf_compress_gnu(p.scn, 0, 0) : elf_compress(p.scn, 0, 0);
    Elf_Data* d = rc >= 0 ? elf_getdata(p.scn, nullptr) : nullptr;
    if (d == nullptr || d->d_buf == nullptr || d->d_size != p.size) return plain();
    std::memcpy(image + p.offset, d->d_buf, p.size);
    img->inflated_ += p.size;
  }

  Elf* image_elf = elf_memory(reinterpret_cast<char*>(img->image_), img->image_size_);
  img->image_elf_ = image_elf;
  if (image_elf == nullptr) return plain();
  img->dwarf_ = begin_dwarf(image_elf);
  if (img->dwarf_ == nullptr) return plain();
  // The image holds everything libdw needs: the file is no longer read.
  elf_end(elf);
  img->source_ = nullptr;
  ::close(img->fd_);
  img->fd_ = -1;
  return img;
}

}  // namespace hangscan
