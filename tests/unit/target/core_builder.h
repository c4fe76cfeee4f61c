// FakeCore: builds small ELF cores in memory for the core reader's unit tests.
//
// Why: real cores are megabytes and their contents differ per run; note parsing, bounds
// checks and error paths are tested exactly on fabricated cores whose every byte is known.
#pragma once

#include <elf.h>
#include <sys/user.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hangscan::testing {

inline void put_bytes(std::vector<std::uint8_t>& out, std::size_t at, const void* p,
                      std::size_t n) {
  if (out.size() < at + n) out.resize(at + n);
  std::memcpy(out.data() + at, p, n);
}

template <class T>
void put(std::vector<std::uint8_t>& out, std::size_t at, T v) {
  put_bytes(out, at, &v, sizeof(T));
}

// Registers of a fabricated thread: pc, stack pointer, orig_rax (-1: not in a syscall).
inline user_regs_struct make_regs(std::uint64_t rip, std::uint64_t rsp,
                                  std::uint64_t orig_rax = ~0ULL) {
  user_regs_struct r{};
  r.rip = rip;
  r.rsp = rsp;
  r.orig_rax = orig_rax;
  r.fs_base = 0x7f0000001000;
  return r;
}

struct FakeCore {
  struct Note {
    std::string owner;
    std::uint32_t type;
    std::vector<std::uint8_t> desc;
  };
  struct Segment {
    std::uint64_t vaddr;
    std::uint64_t memsz;
    std::vector<std::uint8_t> data;  // filesz = data.size()
    std::uint32_t flags = PF_R | PF_W;
  };
  std::vector<Note> notes;
  std::vector<Segment> segments;
  std::uint16_t machine = EM_X86_64;
  std::uint16_t elf_type = ET_CORE;
  unsigned char elf_class = ELFCLASS64;

  static std::vector<std::uint8_t> prstatus(int tid, int cursig, const user_regs_struct& regs) {
    std::vector<std::uint8_t> d(336, 0);
    put<std::int32_t>(d, 0, cursig);
    put<std::int16_t>(d, 12, static_cast<std::int16_t>(cursig));
    put<std::int32_t>(d, 32, tid);
    put<std::int32_t>(d, 36, 1);
    put_bytes(d, 112, &regs, sizeof(regs));
    return d;
  }
  static std::vector<std::uint8_t> prpsinfo(int pid, int ppid, const std::string& fname,
                                            const std::string& args, char sname = 'R') {
    std::vector<std::uint8_t> d(136, 0);
    d[1] = static_cast<std::uint8_t>(sname);
    put<std::int32_t>(d, 24, pid);
    put<std::int32_t>(d, 28, ppid);
    put_bytes(d, 40, fname.data(), std::min<std::size_t>(fname.size(), 16));
    put_bytes(d, 56, args.data(), std::min<std::size_t>(args.size(), 80));
    return d;
  }
  static std::vector<std::uint8_t> siginfo(int signo, int code, std::uint64_t addr_or_pid) {
    std::vector<std::uint8_t> d(128, 0);
    put<std::int32_t>(d, 0, signo);
    put<std::int32_t>(d, 8, code);
    put<std::uint64_t>(d, 16, addr_or_pid);
    return d;
  }
  struct FileEntry {
    std::uint64_t start, end, pgoff;
    std::string path;
  };
  static std::vector<std::uint8_t> file_note(const std::vector<FileEntry>& files,
                                             std::uint64_t page = 4096) {
    std::vector<std::uint8_t> d;
    put<std::uint64_t>(d, 0, files.size());
    put<std::uint64_t>(d, 8, page);
    std::size_t at = 16;
    for (const auto& f : files) {
      put(d, at, f.start);
      put(d, at + 8, f.end);
      put(d, at + 16, f.pgoff);
      at += 24;
    }
    for (const auto& f : files) {
      put_bytes(d, at, f.path.c_str(), f.path.size() + 1);
      at += f.path.size() + 1;
    }
    return d;
  }
  static std::vector<std::uint8_t> auxv(
      const std::vector<std::pair<std::uint64_t, std::uint64_t>>& v) {
    std::vector<std::uint8_t> d;
    std::size_t at = 0;
    for (const auto& [t, val] : v) {
      put(d, at, t);
      put(d, at + 8, val);
      at += 16;
    }
    put<std::uint64_t>(d, at, AT_NULL);
    put<std::uint64_t>(d, at + 8, 0);
    return d;
  }

  void add_note(std::uint32_t type, std::vector<std::uint8_t> desc, std::string owner = "CORE") {
    notes.push_back(Note{std::move(owner), type, std::move(desc)});
  }

  std::vector<std::uint8_t> build() const {
    std::vector<std::uint8_t> out;
    std::vector<std::uint8_t> note_bytes;
    for (const auto& n : notes) {
      std::size_t at = note_bytes.size();
      put<std::uint32_t>(note_bytes, at, static_cast<std::uint32_t>(n.owner.size() + 1));
      put<std::uint32_t>(note_bytes, at + 4, static_cast<std::uint32_t>(n.desc.size()));
      put<std::uint32_t>(note_bytes, at + 8, n.type);
      put_bytes(note_bytes, at + 12, n.owner.c_str(), n.owner.size() + 1);
      std::size_t desc_at = at + 12 + ((n.owner.size() + 1 + 3) & ~std::size_t{3});
      if (!n.desc.empty()) put_bytes(note_bytes, desc_at, n.desc.data(), n.desc.size());
      note_bytes.resize(desc_at + ((n.desc.size() + 3) & ~std::size_t{3}), 0);
    }
    const std::size_t phnum = 1 + segments.size();
    const std::size_t notes_at = sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr);
    std::size_t data_at = notes_at + note_bytes.size();

    Elf64_Ehdr eh{};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = elf_class;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = elf_type;
    eh.e_machine = machine;
    eh.e_version = EV_CURRENT;
    eh.e_phoff = sizeof(Elf64_Ehdr);
    eh.e_ehsize = sizeof(Elf64_Ehdr);
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_phnum = static_cast<std::uint16_t>(phnum);
    put(out, 0, eh);

    Elf64_Phdr note{};
    note.p_type = PT_NOTE;
    note.p_offset = notes_at;
    note.p_filesz = note_bytes.size();
    put(out, sizeof(Elf64_Ehdr), note);
    for (std::size_t i = 0; i < segments.size(); ++i) {
      const auto& s = segments[i];
      Elf64_Phdr ph{};
      ph.p_type = PT_LOAD;
      ph.p_flags = s.flags;
      ph.p_offset = data_at;
      ph.p_vaddr = s.vaddr;
      ph.p_filesz = s.data.size();
      ph.p_memsz = s.memsz;
      put(out, sizeof(Elf64_Ehdr) + (i + 1) * sizeof(Elf64_Phdr), ph);
      if (!s.data.empty()) put_bytes(out, data_at, s.data.data(), s.data.size());
      data_at += s.data.size();
    }
    if (!note_bytes.empty()) put_bytes(out, notes_at, note_bytes.data(), note_bytes.size());
    out.resize(std::max(out.size(), data_at));
    return out;
  }
};

}  // namespace hangscan::testing
