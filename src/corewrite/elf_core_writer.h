// write_elf_core(): an x86-64 ELF core file from process facts, a plan and a memory reader.
//
// Why: gdb, eu-stack and `hangscan core` must all read what `hangscan gcore` writes, so the
// file follows the kernel's own layout (ET_CORE, one PT_NOTE with NT_PRSTATUS per thread,
// NT_PRPSINFO, NT_AUXV, NT_FILE, NT_FPREGSET; memory as page-aligned PT_LOAD segments whose
// p_filesz is 0 for what was left out). Memory is streamed in chunks and all-zero pages
// become holes, so writing a core never holds the target's memory in RAM. What was left out
// goes into a note of our own (owner "HANGSCAN"), written last, so unreadable pages found
// while copying are listed too.
#pragma once

#include <sys/user.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "corewrite/core_plan.h"
#include "hangscan/result.h"
#include "target/memory_reader.h"
#include "target/target.h"

namespace hangscan {

// Note type of the HANGSCAN note: text lines "omitted START-END SIZE reason".
inline constexpr std::uint32_t kHangscanNoteType = 0x48530001;
inline constexpr const char* kHangscanNoteOwner = "HANGSCAN";

struct CoreThreadState {
  int tid = 0;
  Registers regs;
  std::optional<user_fpregs_struct> fpregs;
  std::uint64_t sigpend = 0;
  std::uint64_t sighold = 0;
  std::uint64_t utime_us = 0;
  std::uint64_t stime_us = 0;
};

struct CoreProcessInfo {
  int pid = 0;
  int ppid = 0;
  int pgrp = 0;
  int sid = 0;
  unsigned uid = 0;
  unsigned gid = 0;
  char state = 'S';
  int nice = 0;
  std::string comm;
  std::string psargs;                    // command line, spaces between arguments
  std::vector<std::uint8_t> auxv;        // /proc/PID/auxv as is
  std::vector<Mapping> mappings;         // NT_FILE: the file-backed ones are listed
  std::vector<CoreThreadState> threads;  // the first one is the "current" thread for gdb
};

struct CoreWriteStats {
  std::uint64_t file_size = 0;         // st_size
  std::uint64_t data_bytes = 0;        // memory bytes actually written (not holes)
  std::uint64_t zero_bytes = 0;        // all-zero pages left as holes
  std::uint64_t unreadable_bytes = 0;  // planned memory that could not be read (holes too)
  std::uint64_t guard_bytes = 0;       // guard pages inside kept mappings (holes, never readable)
  std::vector<std::string> omitted;    // the HANGSCAN note's lines
};

// Writes the core to `fd` (a new, empty regular file). Errors are I/O errors (disk full).
Result<CoreWriteStats> write_elf_core(int fd, const CoreProcessInfo& info, const CorePlan& plan,
                                      MemoryReader& memory);

}  // namespace hangscan
