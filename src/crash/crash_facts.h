// CrashFacts: what a crashed process's memory says about its crash, beyond the stacks.
//
// Why: the crash explainer's sentences need facts that are not in the frames: the crashed
// thread's stack pointer (a fault next to it is a stack overflow), glibc's abort message
// (assert text, "double free or corruption"), and the C++ exception being handled when
// std::terminate ran (its type and what()). They are read here, from memory only (never by
// calling into the target), best effort: anything unreadable stays empty.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hangscan/model.h"
#include "target/target.h"

namespace hangscan {

struct CxxException {
  std::string type;                 // demangled: "std::runtime_error"
  std::optional<std::string> what;  // for std::runtime_error / std::logic_error families
};

struct CrashFacts {
  std::optional<std::uint64_t> sp;           // the crashed thread's stack pointer
  std::optional<Mapping> stack;              // the mapping holding it
  std::optional<std::string> abort_message;  // glibc's __abort_msg
  std::optional<CxxException> exception;     // the exception std::terminate saw
};

// Reads the facts for the thread recorded as crashed in `snap.core`; empty when the snapshot
// has no crash (a live process or a gcore).
CrashFacts gather_crash_facts(Target& target, const ProcessSnapshot& snap);

// The exception being handled by the thread whose thread pointer is `fs_base`, found
// through libstdc++'s per-thread __cxa_eh_globals, else by scanning [sp, sp + 64 KiB) for
// an exception header. Exposed for tests.
std::optional<CxxException> current_cxx_exception(Target& target, std::uint64_t fs_base,
                                                  std::optional<std::uint64_t> sp,
                                                  std::optional<std::uint64_t> stack_end);

// Decodes a libstdc++ exception header at `header` (the __cxa_exception, whose unwind
// header sits 80 bytes in); nullopt when the magic "GNUCC++" class is not there.
std::optional<CxxException> decode_cxa_exception(MemoryReader& mem, std::uint64_t header);

}  // namespace hangscan
