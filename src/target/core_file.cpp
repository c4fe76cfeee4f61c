// ELF core parsing by hand: every field is bounds-checked against the bytes present, so a
// truncated or hostile core yields an Error or a warning, never an out-of-bounds read.
#include "target/core_file.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <string_view>

#include <fmt/core.h>

#include "target/core_decompress.h"

namespace hangscan {
namespace {

// x86-64 layouts of the kernel's note descriptors (include/uapi/linux/elfcore.h). Offsets
// are spelled out rather than taken from <sys/procfs.h> so that a short note is detected by
// comparing sizes, not by reading past its end.
constexpr std::size_t kPrstatusSize = 336;
constexpr std::size_t kPrstatusCursig = 12;
constexpr std::size_t kPrstatusSigpend = 16;
constexpr std::size_t kPrstatusSighold = 24;
constexpr std::size_t kPrstatusPid = 32;
constexpr std::size_t kPrstatusPpid = 36;
constexpr std::size_t kPrstatusRegs = 112;
static_assert(sizeof(user_regs_struct) == 27 * 8, "x86-64 user_regs_struct expected");
static_assert(kPrstatusRegs + sizeof(user_regs_struct) <= kPrstatusSize);

constexpr std::size_t kPrpsinfoSize = 136;
constexpr std::size_t kPrpsinfoSname = 1;
constexpr std::size_t kPrpsinfoUid = 16;
constexpr std::size_t kPrpsinfoGid = 20;
constexpr std::size_t kPrpsinfoPid = 24;
constexpr std::size_t kPrpsinfoPpid = 28;
constexpr std::size_t kPrpsinfoFname = 40;
constexpr std::size_t kPrpsinfoFnameLen = 16;
constexpr std::size_t kPrpsinfoArgs = 56;
constexpr std::size_t kPrpsinfoArgsLen = 80;

constexpr std::size_t kSiginfoMin = 24;
constexpr std::uint32_t kNtSiginfo = 0x53494749;  // "SIGI"
constexpr std::uint32_t kNtFile = 0x46494c45;     // "FILE"

constexpr std::size_t kMaxAuxv = 4096;
// Notes are read into memory: ~4 KB per thread (registers, FPU and xstate), so 1 GiB is
// a quarter million threads; a larger note segment is corrupt.
constexpr std::uint64_t kMaxNoteBytes = std::uint64_t{1} << 30;
constexpr std::size_t kMaxThreads = 1 << 20;

template <class T>
T load(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// A bounded C string from a fixed-size field.
std::string fixed_string(const std::uint8_t* p, std::size_t n) {
  const void* nul = std::memchr(p, 0, n);
  std::size_t len =
      nul != nullptr ? static_cast<std::size_t>(static_cast<const std::uint8_t*>(nul) - p) : n;
  return std::string(reinterpret_cast<const char*>(p), len);
}

// x86-64 user space ends at 2^47; the kernel half (the vsyscall page, which cores hold)
// starts at 2^64 - 2^47. A mapping larger than either, or across the hole, is corrupt.
bool impossible_range(std::uint64_t vaddr, std::uint64_t memsz) {
  constexpr std::uint64_t kUserEnd = std::uint64_t{1} << 47;
  constexpr std::uint64_t kKernelStart = ~std::uint64_t{0} - kUserEnd + 1;
  if (memsz > kUserEnd) return true;
  return vaddr < kKernelStart && vaddr + memsz > kUserEnd && vaddr + memsz >= vaddr;
}

std::uint64_t align4(std::uint64_t v) { return (v + 3) & ~std::uint64_t{3}; }

bool signal_has_address(int signo) {
  return signo == SIGSEGV || signo == SIGBUS || signo == SIGILL || signo == SIGFPE ||
         signo == SIGTRAP;
}

const char* machine_name(unsigned machine) {
  switch (machine) {
    case EM_AARCH64:
      return "aarch64";
    case EM_386:
      return "i386";
    case EM_PPC64:
      return "ppc64";
    case EM_S390:
      return "s390x";
    case EM_RISCV:
      return "riscv";
    case EM_ARM:
      return "arm";
    default:
      return "unknown";
  }
}

Error bad_core(std::string msg, std::string hint) {
  return Error(Errc::bad_data, std::move(msg), 0, std::move(hint));
}

constexpr const char* kTruncatedHint =
    "the core was cut short (disk full, size limit, interrupted copy); take it again or copy "
    "it completely";

}  // namespace

std::string signal_name(int signo) {
  if (signo > 0 && signo < SIGRTMIN) {
    if (const char* abbrev = sigabbrev_np(signo)) return std::string("SIG") + abbrev;
  }
  if (signo >= SIGRTMIN && signo <= SIGRTMAX) return fmt::format("SIGRTMIN+{}", signo - SIGRTMIN);
  return fmt::format("SIG{}", signo);
}

namespace {

const char* file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

Result<std::unique_ptr<CoreFile>> CoreFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int err = errno;
    return Error(err == EACCES ? Errc::permission : Errc::not_found,
                 fmt::format("{}: cannot open: {}", path, std::strerror(err)), err,
                 err == EACCES ? "run as the core's owner or root" : "check the path");
  }
  struct stat given {};
  if (fstat(fd, &given) == 0 && !S_ISREG(given.st_mode)) {
    ::close(fd);
    return Error(
        Errc::bad_data, fmt::format("{}: {}, not a core file", path, file_kind(given.st_mode)), 0,
        "give the path of a regular core file; to read a core from a pipe or device, save it "
        "to a file first (cat PIPE > core.1)");
  }
  auto decompressed = decompress_if_needed(fd, path);
  if (!decompressed) {
    ::close(fd);
    return std::move(decompressed).error();
  }
  if (decompressed.value() >= 0) {
    ::close(fd);
    fd = decompressed.value();
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return bad_core(fmt::format("{}: not a regular file", path), "give the path of a core file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return bad_core(fmt::format("{}: empty file", path),
                    "the core was not written (ulimit -c 0, or disk full); check "
                    "kernel.core_pattern and `ulimit -c`");
  }
  return parse(make_file_bytes(fd, static_cast<std::size_t>(st.st_size)), path);
}

Result<std::unique_ptr<CoreFile>> CoreFile::parse_buffer(std::vector<std::uint8_t> bytes,
                                                         std::string name) {
  return parse(make_buffer_bytes(std::move(bytes)), std::move(name));
}

Result<std::unique_ptr<CoreFile>> CoreFile::parse(std::unique_ptr<CoreBytes> bytes,
                                                  std::string name) {
  auto core = std::unique_ptr<CoreFile>(new CoreFile());
  core->bytes_ = std::move(bytes);
  core->name_ = std::move(name);
  Status st = core->parse_all();
  if (!st) {
    Error e = std::move(st).error();
    e.message = fmt::format("{}: {}", core->name_, e.message);
    return e;
  }
  return core;
}

Status CoreFile::parse_all() {
  const std::size_t n = bytes_->size();
  Elf64_Ehdr eh{};
  std::uint8_t ident[EI_NIDENT] = {};
  std::size_t head = bytes_->read_at(0, &eh, sizeof(eh));
  std::memcpy(ident, &eh, std::min<std::size_t>(head, EI_NIDENT));
  if (n >= SELFMAG && head < sizeof(Elf64_Ehdr) && std::memcmp(ident, ELFMAG, SELFMAG) == 0) {
    return bad_core("truncated inside the ELF header", kTruncatedHint);
  }
  if (head < EI_NIDENT || std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    return bad_core("not an ELF file",
                    "give a core file (kernel core, `gcore` output, or systemd-coredump's "
                    ".zst/.lz4 core)");
  }
  if (ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB) {
    return Error(Errc::unsupported, "not a 64-bit little-endian ELF file", 0,
                 "hangscan reads x86-64 cores; read this one on a machine of its architecture");
  }
  if (eh.e_type != ET_CORE) {
    const char* kind = eh.e_type == ET_EXEC  ? "an executable"
                       : eh.e_type == ET_DYN ? "a shared library or PIE executable"
                                             : "not a core";
    return bad_core(fmt::format("ELF file but not a core ({})", kind),
                    "pass the core file; the program that crashed goes to --exe");
  }
  if (eh.e_machine != EM_X86_64) {
    return Error(Errc::unsupported,
                 fmt::format("core of another architecture ({}, e_machine {})",
                             machine_name(eh.e_machine), eh.e_machine),
                 0, "hangscan reads x86-64 cores; read this one on a machine of its architecture");
  }
  if (eh.e_phentsize != sizeof(Elf64_Phdr)) {
    return bad_core(fmt::format("corrupt ELF header (program header size {})", eh.e_phentsize),
                    "the core is damaged; take it again");
  }
  std::uint64_t phnum = eh.e_phnum;
  if (phnum == PN_XNUM) {
    // More than 65534 mappings: the real count is in section header 0.
    Elf64_Shdr sh0{};
    if (eh.e_shoff == 0 || eh.e_shoff > n || n - eh.e_shoff < sizeof(Elf64_Shdr) ||
        bytes_->read_at(eh.e_shoff, &sh0, sizeof(sh0)) != sizeof(sh0)) {
      return bad_core("program header count in a missing section header", kTruncatedHint);
    }
    phnum = sh0.sh_info;
  }
  if (phnum == 0)
    return bad_core("core without program headers", "the core is damaged; take it again");
  if (eh.e_phoff > n || (n - eh.e_phoff) / sizeof(Elf64_Phdr) < phnum) {
    return bad_core("truncated inside the program headers", kTruncatedHint);
  }
  std::vector<Elf64_Phdr> phdrs(static_cast<std::size_t>(phnum));
  std::size_t ph_bytes = phdrs.size() * sizeof(Elf64_Phdr);
  if (bytes_->read_at(eh.e_phoff, phdrs.data(), ph_bytes) != ph_bytes) {
    return bad_core("unreadable program headers", kTruncatedHint);
  }

  std::uint64_t needed = 0;
  bool notes_cut = false;
  for (std::uint64_t i = 0; i < phnum; ++i) {
    const Elf64_Phdr& ph = phdrs[static_cast<std::size_t>(i)];
    if (ph.p_type == PT_NOTE) {
      if (ph.p_filesz > kMaxNoteBytes) {
        warnings_.push_back(
            fmt::format("note segment of {} bytes is larger than any core "
                        "writes; skipped",
                        ph.p_filesz));
        continue;
      }
      // A cut file keeps the notes before the cut (hangscan's own note comes last, after
      // the memory): read those, and say that the rest is missing.
      std::uint64_t present = ph.p_offset >= n ? 0 : std::min(ph.p_filesz, n - ph.p_offset);
      std::vector<std::uint8_t> notes(static_cast<std::size_t>(present));
      if (bytes_->read_at(ph.p_offset, notes.data(), notes.size()) != notes.size()) {
        return bad_core("unreadable notes (threads, registers)", kTruncatedHint);
      }
      const bool cut = present < ph.p_filesz;
      parse_notes(notes, ph.p_offset, cut);
      if (cut) {
        notes_cut = true;
        truncated_ = true;
        warnings_.push_back(fmt::format(
            "core truncated inside its notes: {} of {} bytes of the note segment at offset {} "
            "present; the notes past the cut are missing",
            present, ph.p_filesz, ph.p_offset));
      }
    } else if (ph.p_type == PT_LOAD) {
      if (ph.p_memsz == 0) continue;
      if (impossible_range(ph.p_vaddr, ph.p_memsz)) {
        return bad_core(fmt::format("corrupt core: program header {} claims {} bytes of memory at "
                                    "{:#x}, more than an x86-64 process can map",
                                    i, ph.p_memsz, ph.p_vaddr),
                        "the core is damaged; take it again");
      }
      if (ph.p_vaddr + ph.p_memsz < ph.p_vaddr || ph.p_filesz > ph.p_memsz) {
        warnings_.push_back(
            fmt::format("program header {} is corrupt (address range); skipped", i));
        continue;
      }
      if (ph.p_offset + ph.p_filesz < ph.p_offset) {
        warnings_.push_back(fmt::format("program header {} is corrupt (file range); skipped", i));
        continue;
      }
      needed = std::max<std::uint64_t>(needed, ph.p_offset + ph.p_filesz);
      segments_.push_back(
          CoreSegment{ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz, ph.p_flags});
    }
  }
  if (needed > n) {
    truncated_ = true;
    warnings_.push_back(fmt::format(
        "core truncated: {} of {} bytes present; memory past the end of the file is missing", n,
        needed));
  }
  std::sort(segments_.begin(), segments_.end(),
            [](const CoreSegment& a, const CoreSegment& b) { return a.vaddr < b.vaddr; });
  if (threads_.empty() && notes_cut) {
    return bad_core("truncated before the end of its notes (threads, registers)", kTruncatedHint);
  }
  for (std::size_t i = 0; i < threads_.size(); ++i) thread_index_[threads_[i].tid] = i;
  if (threads_.empty()) {
    return bad_core("no thread (NT_PRSTATUS) notes in the core",
                    "the core is damaged or was written by a tool hangscan does not know");
  }
  return Ok{};
}

void CoreFile::parse_notes(const std::vector<std::uint8_t>& notes, std::uint64_t offset, bool cut) {
  const std::uint8_t* p = notes.data();
  const std::uint64_t size = notes.size();
  std::uint64_t pos = 0;
  while (size - pos >= 12) {
    auto namesz = load<std::uint32_t>(p + pos);
    auto descsz = load<std::uint32_t>(p + pos + 4);
    auto type = load<std::uint32_t>(p + pos + 8);
    std::uint64_t name_at = pos + 12;
    std::uint64_t desc_at = name_at + align4(namesz);
    if (desc_at > size || size - desc_at < descsz) {
      if (cut) return;  // the note the file was cut in; the caller says so
      warnings_.push_back(fmt::format(
          "corrupt note at offset {} (sizes {}+{} exceed the note segment); later notes skipped",
          offset + pos, namesz, descsz));
      return;
    }
    std::string owner = fixed_string(p + name_at, namesz);
    parse_note(type, owner, p + desc_at, descsz);
    pos = desc_at + align4(descsz);
    if (pos > size) break;
  }
}

void CoreFile::parse_note(std::uint32_t type, const std::string& owner, const std::uint8_t* desc,
                          std::size_t size) {
  if (owner == "HANGSCAN" && type == 0x48530001) {  // written by `hangscan gcore`
    parse_hangscan_note(desc, size);
    return;
  }
  if (owner != "CORE") return;  // "LINUX" notes hold FPU/xstate; not needed here
  switch (type) {
    case NT_PRSTATUS:
      parse_prstatus(desc, size);
      break;
    case NT_PRPSINFO:
      parse_prpsinfo(desc, size);
      break;
    case kNtSiginfo:
      parse_siginfo(desc, size);
      break;
    case kNtFile:
      parse_file_note(desc, size);
      break;
    case NT_AUXV:
      parse_auxv(desc, size);
      break;
    default:
      break;
  }
}

void CoreFile::parse_prstatus(const std::uint8_t* desc, std::size_t size) {
  if (size < kPrstatusSize) {
    warnings_.push_back(fmt::format("short NT_PRSTATUS note ({} bytes); thread skipped", size));
    return;
  }
  if (threads_.size() >= kMaxThreads) return;
  CoreThread t;
  t.cursig = load<std::int16_t>(desc + kPrstatusCursig);
  t.sigpend = load<std::uint64_t>(desc + kPrstatusSigpend);
  t.sighold = load<std::uint64_t>(desc + kPrstatusSighold);
  t.tid = load<std::int32_t>(desc + kPrstatusPid);
  t.ppid = load<std::int32_t>(desc + kPrstatusPpid);
  std::memcpy(&t.regs.raw, desc + kPrstatusRegs, sizeof(user_regs_struct));
  threads_.push_back(t);
}

void CoreFile::parse_prpsinfo(const std::uint8_t* desc, std::size_t size) {
  if (size < kPrpsinfoSize) {
    warnings_.push_back(fmt::format("short NT_PRPSINFO note ({} bytes); ignored", size));
    return;
  }
  CorePsInfo ps;
  char sname = static_cast<char>(desc[kPrpsinfoSname]);
  ps.state = sname >= 'A' && sname <= 'z' ? sname : '?';
  ps.uid = load<std::uint32_t>(desc + kPrpsinfoUid);
  ps.gid = load<std::uint32_t>(desc + kPrpsinfoGid);
  ps.pid = load<std::int32_t>(desc + kPrpsinfoPid);
  ps.ppid = load<std::int32_t>(desc + kPrpsinfoPpid);
  ps.fname = fixed_string(desc + kPrpsinfoFname, kPrpsinfoFnameLen);
  ps.psargs = fixed_string(desc + kPrpsinfoArgs, kPrpsinfoArgsLen);
  while (!ps.psargs.empty() && ps.psargs.back() == ' ') ps.psargs.pop_back();
  psinfo_ = std::move(ps);
}

void CoreFile::parse_siginfo(const std::uint8_t* desc, std::size_t size) {
  if (size < kSiginfoMin) {
    warnings_.push_back(fmt::format("short NT_SIGINFO note ({} bytes); ignored", size));
    return;
  }
  CoreSigInfo si;
  si.signo = load<std::int32_t>(desc + 0);
  si.err = load<std::int32_t>(desc + 4);
  si.code = load<std::int32_t>(desc + 8);
  if (si.code > 0 && signal_has_address(si.signo)) {
    si.address = load<std::uint64_t>(desc + 16);
  } else if (si.code <= 0) {
    si.sender_pid = load<std::int32_t>(desc + 16);
  }
  siginfo_ = si;
}

void CoreFile::parse_file_note(const std::uint8_t* desc, std::size_t size) {
  if (size < 16) {
    warnings_.push_back("short NT_FILE note; file mappings unknown");
    return;
  }
  auto count = load<std::uint64_t>(desc);
  auto page = load<std::uint64_t>(desc + 8);
  if (count > (size - 16) / 24) {
    warnings_.push_back(
        fmt::format("corrupt NT_FILE note ({} entries in {} bytes); ignored", count, size));
    return;
  }
  if (page == 0 || (page & (page - 1)) != 0 || page > (1ULL << 30)) {
    warnings_.push_back(fmt::format("corrupt NT_FILE page size {}; using 4096", page));
    page = 4096;
  }
  page_size_ = page;
  const std::uint8_t* str = desc + 16 + count * 24;
  const std::uint8_t* end = desc + size;
  std::vector<CoreFileMap> out;
  out.reserve(static_cast<std::size_t>(count));
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint8_t* e = desc + 16 + i * 24;
    CoreFileMap m;
    m.start = load<std::uint64_t>(e);
    m.end = load<std::uint64_t>(e + 8);
    auto pgoff = load<std::uint64_t>(e + 16);
    const void* nul =
        str < end ? std::memchr(str, 0, static_cast<std::size_t>(end - str)) : nullptr;
    if (nul == nullptr) {
      warnings_.push_back("NT_FILE note: file names cut short; later mappings unnamed");
      break;
    }
    m.path.assign(reinterpret_cast<const char*>(str),
                  static_cast<std::size_t>(static_cast<const std::uint8_t*>(nul) - str));
    str = static_cast<const std::uint8_t*>(nul) + 1;
    if (m.end <= m.start || pgoff > UINT64_MAX / page) continue;
    m.file_offset = pgoff * page;
    out.push_back(std::move(m));
  }
  files_ = std::move(out);
}

void CoreFile::parse_auxv(const std::uint8_t* desc, std::size_t size) {
  auxv_.clear();
  for (std::size_t at = 0; at + 16 <= size && auxv_.size() < kMaxAuxv; at += 16) {
    auto type = load<std::uint64_t>(desc + at);
    auto val = load<std::uint64_t>(desc + at + 8);
    if (type == AT_NULL) break;
    auxv_.emplace_back(type, val);
  }
}

void CoreFile::parse_hangscan_note(const std::uint8_t* desc, std::size_t size) {
  constexpr std::size_t kMaxLines = 100000;
  std::string_view text(reinterpret_cast<const char*>(desc), size);
  while (!text.empty() && omitted_.size() < kMaxLines) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (line.starts_with("omitted ")) omitted_.emplace_back(line.substr(8));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

std::optional<std::uint64_t> CoreFile::auxv_value(std::uint64_t type) const {
  for (const auto& [t, v] : auxv_) {
    if (t == type) return v;
  }
  return std::nullopt;
}

const CoreThread* CoreFile::thread(int tid) const {
  auto it = thread_index_.find(tid);
  return it != thread_index_.end() ? &threads_[it->second] : nullptr;
}

const CoreSegment* CoreFile::segment_at(std::uint64_t addr) const {
  auto it = std::upper_bound(segments_.begin(), segments_.end(), addr,
                             [](std::uint64_t a, const CoreSegment& s) { return a < s.vaddr; });
  if (it == segments_.begin()) return nullptr;
  --it;
  return addr < it->end() ? &*it : nullptr;
}

bool CoreFile::in_omitted_part(std::uint64_t addr) const {
  const CoreSegment* s = segment_at(addr);
  return s != nullptr && addr - s->vaddr >= s->filesz;
}

std::size_t CoreFile::read(std::uint64_t addr, void* buf, std::size_t len) const {
  auto* out = static_cast<std::uint8_t*>(buf);
  const std::size_t n = bytes_->size();
  std::size_t done = 0;
  while (done < len) {
    std::uint64_t a = addr + done;
    if (a < addr) break;  // wrapped around the address space
    const CoreSegment* s = segment_at(a);
    if (s == nullptr) break;
    std::uint64_t present = s->offset >= n ? 0 : std::min<std::uint64_t>(s->filesz, n - s->offset);
    std::uint64_t rel = a - s->vaddr;
    if (rel >= present) break;
    auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(len - done, present - rel));
    std::size_t got = bytes_->read_at(s->offset + rel, out + done, chunk);
    done += got;
    if (got < chunk) break;
  }
  return done;
}

}  // namespace hangscan
