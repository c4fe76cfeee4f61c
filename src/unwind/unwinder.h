// Unwinder: turns one thread's copied registers and stack into return addresses.
//
// Why an interface: libdw (default: CFI from .eh_frame/.debug_frame, works for live and core)
// and libunwind (second opinion) must give the same stacks and be swappable with
// `--unwinder`. Both unwind the copy taken during the freeze, falling back to the target's
// memory only for addresses outside the copy, so unwinding happens after the target resumed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hangscan/result.h"
#include "target/target.h"

namespace hangscan {

// The deepest stack either unwinder walks: beyond it the stack is cut and says so
// ("stopped after N frames"); a runaway recursion must not cost unbounded time.
constexpr std::size_t kMaxUnwindFrames = 512;

struct RawFrame {
  std::uint64_t pc = 0;
  // True when pc is exact (innermost frame, or a signal frame); false for return addresses,
  // which are symbolized at pc - 1 so a call at the end of a function is attributed right.
  bool exact = false;
  // The frame's stack pointer (its caller's is this frame's CFA): the frame's locals lie in
  // [sp, caller's sp). 0 when the unwinder could not tell. Finds eval-loop calls by address.
  std::uint64_t sp = 0;
};

struct UnwindResult {
  std::vector<RawFrame> frames;  // innermost first
  std::string stop_reason;       // empty when the walk reached the outermost frame
};

enum class UnwinderKind { libdw, libunwind };

class Unwinder {
 public:
  virtual ~Unwinder() = default;
  virtual Result<UnwindResult> unwind(const Registers& regs, const StackCopy& stack, int tid) = 0;
};

class DwflSession;

// One unwinder per target: it owns the per-address-space state (CFI caches). The libdw
// backend unwinds through the target's DwflSession (shared with the symbolizer).
Result<std::unique_ptr<Unwinder>> make_unwinder(UnwinderKind kind, ModuleSource& source,
                                                DwflSession& session);

}  // namespace hangscan
