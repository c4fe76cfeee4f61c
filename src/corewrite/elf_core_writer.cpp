// The kernel's core layout (fs/binfmt_elf.c), written with pwrite at computed offsets.
#include "corewrite/elf_core_writer.h"

#include <elf.h>
#include <sys/procfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "target/guard_pages.h"

namespace hangscan {
namespace {

constexpr std::size_t kChunk = 1 << 20;
constexpr std::uint32_t kNtFile = 0x46494c45;  // "FILE"

std::uint64_t align_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

class NoteBuffer {
 public:
  void add(const std::string& owner, std::uint32_t type, const void* desc, std::size_t size) {
    auto put32 = [this](std::uint32_t v) {
      auto* p = reinterpret_cast<const std::uint8_t*>(&v);
      bytes_.insert(bytes_.end(), p, p + 4);
    };
    put32(static_cast<std::uint32_t>(owner.size() + 1));
    put32(static_cast<std::uint32_t>(size));
    put32(type);
    bytes_.insert(bytes_.end(), owner.begin(), owner.end());
    bytes_.push_back(0);
    pad();
    auto* d = static_cast<const std::uint8_t*>(desc);
    bytes_.insert(bytes_.end(), d, d + size);
    pad();
  }
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

 private:
  void pad() { bytes_.resize(align_up(bytes_.size(), 4), 0); }
  std::vector<std::uint8_t> bytes_;
};

timeval to_timeval(std::uint64_t us) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(us / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(us % 1000000);
  return tv;
}

void add_thread_notes(NoteBuffer& notes, const CoreProcessInfo& info, const CoreThreadState& t) {
  elf_prstatus st{};
  st.pr_sigpend = t.sigpend;
  st.pr_sighold = t.sighold;
  st.pr_pid = t.tid;
  st.pr_ppid = info.ppid;
  st.pr_pgrp = info.pgrp;
  st.pr_sid = info.sid;
  st.pr_utime = to_timeval(t.utime_us);
  st.pr_stime = to_timeval(t.stime_us);
  static_assert(sizeof(st.pr_reg) == sizeof(t.regs.raw));
  std::memcpy(&st.pr_reg, &t.regs.raw, sizeof(st.pr_reg));
  st.pr_fpvalid = t.fpregs ? 1 : 0;
  notes.add("CORE", NT_PRSTATUS, &st, sizeof(st));
}

void add_process_notes(NoteBuffer& notes, const CoreProcessInfo& info) {
  elf_prpsinfo ps{};
  ps.pr_state = 0;
  ps.pr_sname = info.state;
  ps.pr_zomb = info.state == 'Z' ? 1 : 0;
  ps.pr_nice = static_cast<char>(info.nice);
  ps.pr_uid = info.uid;
  ps.pr_gid = info.gid;
  ps.pr_pid = info.pid;
  ps.pr_ppid = info.ppid;
  ps.pr_pgrp = info.pgrp;
  ps.pr_sid = info.sid;
  std::strncpy(ps.pr_fname, info.comm.c_str(), sizeof(ps.pr_fname) - 1);
  std::strncpy(ps.pr_psargs, info.psargs.c_str(), sizeof(ps.pr_psargs) - 1);
  notes.add("CORE", NT_PRPSINFO, &ps, sizeof(ps));
  if (!info.auxv.empty()) notes.add("CORE", NT_AUXV, info.auxv.data(), info.auxv.size());

  // NT_FILE: count, page size, (start, end, page offset) per file mapping, then the names.
  std::vector<std::uint64_t> words;
  std::string names;
  std::uint64_t count = 0;
  for (const auto& m : info.mappings) {
    if (!m.is_file()) continue;
    ++count;
    words.push_back(m.start);
    words.push_back(m.end);
    words.push_back(m.offset / 4096);
    names += m.path;
    if (m.deleted) names += " (deleted)";
    names.push_back('\0');
  }
  std::vector<std::uint8_t> desc(16 + words.size() * 8 + names.size());
  std::uint64_t page = 4096;
  std::memcpy(desc.data(), &count, 8);
  std::memcpy(desc.data() + 8, &page, 8);
  if (!words.empty()) std::memcpy(desc.data() + 16, words.data(), words.size() * 8);
  std::memcpy(desc.data() + 16 + words.size() * 8, names.data(), names.size());
  notes.add("CORE", kNtFile, desc.data(), desc.size());
}

std::uint32_t flags_of(const std::string& perms) {
  std::uint32_t f = 0;
  if (!perms.empty() && perms[0] == 'r') f |= PF_R;
  if (perms.size() > 1 && perms[1] == 'w') f |= PF_W;
  if (perms.size() > 2 && perms[2] == 'x') f |= PF_X;
  return f;
}

bool all_zero(const std::uint8_t* p, std::size_t n) {
  std::uint64_t acc = 0;
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    acc |= w;
  }
  for (std::size_t i = n - n % 8; i < n; ++i) acc |= p[i];
  return acc == 0;
}

class Writer {
 public:
  Writer(int fd, MemoryReader& mem) : fd_(fd), mem_(mem), buf_(kChunk) {}

  Status put(std::uint64_t off, const void* p, std::size_t n) {
    auto* c = static_cast<const std::uint8_t*>(p);
    while (n > 0) {
      ssize_t w = ::pwrite(fd_, c, n, static_cast<off_t>(off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        int err = w < 0 ? errno : ENOSPC;
        return Error(Errc::io, fmt::format("writing the core: {}", std::strerror(err)), err,
                     err == ENOSPC ? "free disk space where the core goes, write it elsewhere "
                                     "(-o DIR) or lower --max-size"
                                   : "check the output directory");
      }
      c += w;
      n -= static_cast<std::size_t>(w);
      off += static_cast<std::uint64_t>(w);
    }
    return Ok{};
  }

  // Copies [start, start+len) of the target to file offset `off`; zero pages stay holes and
  // unreadable pages are listed.
  Status copy(std::uint64_t start, std::uint64_t len, std::uint64_t off, std::uint64_t page,
              CoreWriteStats& stats, std::vector<std::pair<std::uint64_t, std::uint64_t>>& bad) {
    std::uint64_t at = 0;
    while (at < len) {
      auto want = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, len - at));
      std::size_t got = mem_.read(start + at, buf_.data(), want);
      for (std::size_t p = 0; p < got; p += page) {
        auto n = static_cast<std::size_t>(std::min<std::uint64_t>(page, got - p));
        if (all_zero(buf_.data() + p, n)) {
          stats.zero_bytes += n;
          continue;
        }
        std::size_t run = n;  // extend over following non-zero pages: fewer writes
        while (p + run < got) {
          auto m = static_cast<std::size_t>(std::min<std::uint64_t>(page, got - p - run));
          if (all_zero(buf_.data() + p + run, m)) break;
          run += m;
        }
        auto st = put(off + at + p, buf_.data() + p, run);
        if (!st) return st;
        stats.data_bytes += run;
        p += run - n;
      }
      at += got;
      if (got < want) {
        std::uint64_t bad_start = start + at;
        std::uint64_t bad_end = std::min(start + len, align_up(bad_start + 1, page));
        if (!bad.empty() && bad.back().second == bad_start) {
          bad.back().second = bad_end;
        } else {
          bad.emplace_back(bad_start, bad_end);
        }
        at = bad_end - start;
      }
    }
    return Ok{};
  }

 private:
  int fd_;
  MemoryReader& mem_;
  std::vector<std::uint8_t> buf_;
};

// A hole in the memory to keep: the guard pages in it (madvise guard regions, never readable,
// as the kernel's own cores leave them) are listed as such; the rest could not be read.
void list_unreadable(int pid, std::uint64_t start, std::uint64_t end, CoreWriteStats& stats) {
  std::uint64_t at = start;
  auto unreadable = [&](std::uint64_t to) {
    if (to <= at) return;
    stats.omitted.push_back(omitted_line(at, to, "unreadable"));
    stats.unreadable_bytes += to - at;
  };
  for (const auto& [gs, ge] : guard_pages(pid, start, end)) {
    unreadable(gs);
    stats.omitted.push_back(omitted_line(gs, ge, "guard pages (MADV_GUARD_INSTALL)"));
    stats.guard_bytes += ge - gs;
    at = ge;
  }
  unreadable(end);
}

}  // namespace

Result<CoreWriteStats> write_elf_core(int fd, const CoreProcessInfo& info, const CorePlan& plan,
                                      MemoryReader& memory) {
  constexpr std::uint64_t kPage = 4096;
  NoteBuffer notes;
  for (std::size_t i = 0; i < info.threads.size(); ++i) {
    const auto& t = info.threads[i];
    add_thread_notes(notes, info, t);
    if (i == 0) add_process_notes(notes, info);
    if (t.fpregs) notes.add("CORE", NT_FPREGSET, &*t.fpregs, sizeof(*t.fpregs));
  }

  const std::uint64_t phnum = 2 + plan.pieces.size();  // notes, HANGSCAN note, memory
  const bool extnum = phnum >= PN_XNUM;
  std::uint64_t header = sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr);
  const std::uint64_t shoff = header;
  if (extnum) header += sizeof(Elf64_Shdr);
  const std::uint64_t notes_off = header;
  std::uint64_t data_off = align_up(notes_off + notes.bytes().size(), kPage);

  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
  eh.e_type = ET_CORE;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = extnum ? PN_XNUM : static_cast<Elf64_Half>(phnum);
  if (extnum) {
    eh.e_shoff = shoff;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = 1;
  }

  std::vector<Elf64_Phdr> ph(phnum);
  ph[0].p_type = PT_NOTE;
  ph[0].p_offset = notes_off;
  ph[0].p_filesz = notes.bytes().size();
  ph[0].p_align = 4;
  std::uint64_t off = data_off;
  for (std::size_t i = 0; i < plan.pieces.size(); ++i) {
    const CorePiece& p = plan.pieces[i];
    Elf64_Phdr& h = ph[2 + i];
    h.p_type = PT_LOAD;
    h.p_flags = flags_of(p.perms);
    h.p_vaddr = p.start;
    h.p_memsz = p.size();
    h.p_filesz = p.dump;
    h.p_offset = off;
    h.p_align = kPage;
    off += align_up(p.dump, kPage);
  }

  Writer w(fd, memory);
  CoreWriteStats stats;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> bad;
  for (std::size_t i = 0; i < plan.pieces.size(); ++i) {
    const CorePiece& p = plan.pieces[i];
    if (p.dump == 0) continue;
    auto st = w.copy(p.start, p.dump, ph[2 + i].p_offset, kPage, stats, bad);
    if (!st) return std::move(st).error();
  }

  // The HANGSCAN note, at the end: what was left out, and what could not be read.
  for (const auto& p : plan.pieces) {
    if (!p.omitted.empty()) stats.omitted.push_back(omitted_line(p.start, p.end, p.omitted));
  }
  for (const auto& [s, e] : bad) list_unreadable(info.pid, s, e, stats);
  std::string text;
  for (const auto& l : stats.omitted) text += l + "\n";
  NoteBuffer own;
  own.add(kHangscanNoteOwner, kHangscanNoteType, text.data(), text.size());
  const std::uint64_t own_off = align_up(off, 4);
  ph[1].p_type = PT_NOTE;
  ph[1].p_offset = own_off;
  ph[1].p_filesz = own.bytes().size();
  ph[1].p_align = 4;

  Status st = w.put(own_off, own.bytes().data(), own.bytes().size());
  if (st) st = w.put(0, &eh, sizeof(eh));
  if (st) st = w.put(sizeof(Elf64_Ehdr), ph.data(), ph.size() * sizeof(Elf64_Phdr));
  if (st && extnum) {
    Elf64_Shdr sh{};
    sh.sh_type = SHT_NULL;
    sh.sh_info = static_cast<Elf64_Word>(phnum);
    st = w.put(shoff, &sh, sizeof(sh));
  }
  if (st) st = w.put(notes_off, notes.bytes().data(), notes.bytes().size());
  if (!st) return std::move(st).error();
  stats.file_size = own_off + own.bytes().size();
  return stats;
}

}  // namespace hangscan
