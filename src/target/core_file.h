// CoreFile: a parsed x86-64 ELF core (kernel core, gcore, systemd-coredump .zst/.lz4).
//
// Why: a core is the frozen twin of a live process. Everything `hangscan core` needs from it
// (threads and registers, the signal, the command line, the mappings with their files, the
// auxiliary vector, and the memory) is read here, once, with every size and offset checked
// against the file: a core is untrusted input and a corrupt one must give an Error with a
// hint, never a crash and never a hang. CoreTarget turns this into a Target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hangscan/result.h"
#include "target/core_bytes.h"
#include "target/target.h"

namespace hangscan {

// One NT_PRSTATUS note: one thread.
struct CoreThread {
  int tid = 0;
  int ppid = 0;
  int cursig = 0;  // pr_cursig: the signal being delivered when dumped
  std::uint64_t sigpend = 0;
  std::uint64_t sighold = 0;
  Registers regs;
};

// NT_PRPSINFO: what `ps` would have said about the process.
struct CorePsInfo {
  char state = '?';  // pr_sname
  int pid = 0;
  int ppid = 0;
  unsigned uid = 0;
  unsigned gid = 0;
  std::string fname;   // comm (16 bytes max)
  std::string psargs;  // the start of the command line (80 bytes max)
};

// NT_SIGINFO: the signal that killed the process.
struct CoreSigInfo {
  int signo = 0;
  int code = 0;  // si_code: > 0 from the kernel (a fault), <= 0 sent
  int err = 0;
  std::optional<std::uint64_t> address;  // si_addr, only for faults (SEGV, BUS, ILL, FPE, TRAP)
  std::optional<int> sender_pid;         // kill()/tgkill(): who sent it
};

// One NT_FILE entry: a file-backed mapping.
struct CoreFileMap {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::uint64_t file_offset = 0;  // bytes (the note stores pages)
  std::string path;
};

// One PT_LOAD program header: a mapping, with the part of it present in the file.
struct CoreSegment {
  std::uint64_t vaddr = 0;
  std::uint64_t memsz = 0;
  std::uint64_t offset = 0;  // in the (decompressed) core file
  std::uint64_t filesz = 0;  // bytes present; < memsz: the rest was not dumped
  std::uint32_t flags = 0;   // PF_R | PF_W | PF_X
  std::uint64_t end() const { return vaddr + memsz; }
};

class CoreFile {
 public:
  // Opens, decompresses when needed (zstd, lz4 frames, recognised by their magic) and parses.
  static Result<std::unique_ptr<CoreFile>> open(const std::string& path);
  // Parses bytes already in memory; `name` is used in messages.
  static Result<std::unique_ptr<CoreFile>> parse(std::unique_ptr<CoreBytes> bytes,
                                                 std::string name);
  static Result<std::unique_ptr<CoreFile>> parse_buffer(std::vector<std::uint8_t> bytes,
                                                        std::string name);

  const std::string& name() const { return name_; }
  const std::vector<CoreThread>& threads() const { return threads_; }
  // The thread with this tid (the last note of it, should a core repeat one), or nullptr. A
  // hash lookup: describing each of 200,000 threads must not scan all of them.
  const CoreThread* thread(int tid) const;
  const std::optional<CorePsInfo>& psinfo() const { return psinfo_; }
  const std::optional<CoreSigInfo>& siginfo() const { return siginfo_; }
  const std::vector<CoreFileMap>& files() const { return files_; }
  const std::vector<CoreSegment>& segments() const { return segments_; }  // sorted by vaddr
  const std::vector<std::pair<std::uint64_t, std::uint64_t>>& auxv() const { return auxv_; }
  std::optional<std::uint64_t> auxv_value(std::uint64_t type) const;
  std::uint64_t page_size() const { return page_size_; }
  // Memory `hangscan gcore` left out (its "HANGSCAN" note): "START-END SIZE reason" lines.
  const std::vector<std::string>& omitted() const { return omitted_; }
  // Problems that do not stop the reading (a truncated file, a skipped bad note): they
  // become diagnostics in the report.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // True when PT_LOAD data extends past the end of the file.
  bool truncated() const { return truncated_; }

  // Copies memory present in the core at `addr`; returns bytes copied (short at a hole, at
  // a not-dumped part of a segment, or at the end of the file).
  std::size_t read(std::uint64_t addr, void* buf, std::size_t len) const;
  // The segment containing `addr`, or nullptr.
  const CoreSegment* segment_at(std::uint64_t addr) const;
  // True when `addr` lies in a mapping the kernel chose not to dump (memsz > filesz).
  bool in_omitted_part(std::uint64_t addr) const;

 private:
  CoreFile() = default;
  Status parse_all();
  // `cut`: the file ends inside this note segment (a note cut short is not "corrupt").
  void parse_notes(const std::vector<std::uint8_t>& notes, std::uint64_t offset, bool cut);
  void parse_note(std::uint32_t type, const std::string& owner, const std::uint8_t* desc,
                  std::size_t size);
  void parse_prstatus(const std::uint8_t* desc, std::size_t size);
  void parse_prpsinfo(const std::uint8_t* desc, std::size_t size);
  void parse_siginfo(const std::uint8_t* desc, std::size_t size);
  void parse_file_note(const std::uint8_t* desc, std::size_t size);
  void parse_auxv(const std::uint8_t* desc, std::size_t size);
  void parse_hangscan_note(const std::uint8_t* desc, std::size_t size);

  std::unique_ptr<CoreBytes> bytes_;
  std::string name_;
  std::vector<CoreThread> threads_;
  std::unordered_map<int, std::size_t> thread_index_;  // tid -> index in threads_
  std::optional<CorePsInfo> psinfo_;
  std::optional<CoreSigInfo> siginfo_;
  std::vector<CoreFileMap> files_;
  std::vector<CoreSegment> segments_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> auxv_;
  std::uint64_t page_size_ = 4096;
  std::vector<std::string> warnings_;
  std::vector<std::string> omitted_;
  bool truncated_ = false;
};

// Name of a signal number ("SIGSEGV"), "SIG<n>" when unknown.
std::string signal_name(int signo);

}  // namespace hangscan
