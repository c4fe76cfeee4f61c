// plan_core(): which memory of a process goes into a size-bounded core, and which is left out.
//
// Why: a hung rank often holds gigabytes of tensors or arrays that no stack needs. The plan
// keeps what every reader of the core needs to show full native and Python stacks (thread
// stacks from the stack pointer up, writable data of loaded modules and their .bss, the
// memory the Python walk read, thread control blocks, the vDSO, ELF header pages for
// build-ids), honours the kernel's own switches (coredump_filter, VM_DONTDUMP, VM_IO), and
// then leaves out the largest remaining anonymous memory first until the core fits the cap.
// It is a pure function of its input, so the policy is unit-tested without a process.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "proc/proc_facts.h"  // MappingFacts
#include "target/target.h"

namespace hangscan {

struct PlanInput {
  std::vector<Mapping> mappings;    // /proc/PID/maps order (sorted by address)
  std::vector<MappingFacts> facts;  // parallel to mappings (may be empty: unknown)
  std::vector<std::uint64_t> stack_pointers;
  // Address ranges [first, second) a reader of the core will need: what the Python walk and
  // the environment reader touched, thread control blocks (fs_base).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> keep_ranges;
  std::uint64_t vdso = 0;                // AT_SYSINFO_EHDR
  std::uint32_t coredump_filter = 0x33;  // /proc/PID/coredump_filter (kernel default)
  std::uint64_t max_size = 256ull << 20;
  std::uint64_t page_size = 4096;
};

// Why a piece is in the core (for the summary and the docs).
enum class KeepReason { none, stack, module_data, python, vdso, elf_header, other };

// A piece of one mapping: one PT_LOAD segment.
struct CorePiece {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::uint64_t dump = 0;  // bytes from `start` written to the core (0 .. end-start)
  std::string perms;       // "rw-p"
  KeepReason keep = KeepReason::none;
  bool must = false;    // never left out for size
  std::string omitted;  // why it was left out; listed in the HANGSCAN note
  std::uint64_t size() const { return end - start; }
};

struct CorePlan {
  std::vector<CorePiece> pieces;  // by address
  std::uint64_t dump_bytes = 0;   // sum of CorePiece::dump
  std::uint64_t must_bytes = 0;   // of which never left out
  std::vector<std::string> warnings;
};

CorePlan plan_core(const PlanInput& in);

// Byte counts as "2.0G", "512K", "123" for messages and notes.
std::string human_size(std::uint64_t bytes);

// The HANGSCAN note's line for a left-out piece: "omitted START-END SIZE reason".
std::string omitted_line(std::uint64_t start, std::uint64_t end, const std::string& reason);

}  // namespace hangscan
