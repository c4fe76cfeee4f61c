#include "capture/finish.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "capture/python_capture.h"
#include "unwind/dwfl_session.h"
#include "unwind/unwinder.h"
#include "util/contain.h"
#include "util/diagnostic.h"

namespace hangscan {

namespace {

Diagnostic make_diag(Diagnostic::Severity sev, int pid, std::string msg, std::string hint = {}) {
  return make_diagnostic(sev, std::move(msg), std::move(hint), pid);
}

// A process that died while stopped: what was copied before is exact, the rest is missing.
// It is reported dead (the suspects name it) with an error, so the run does not end in 0.
void report_death(const ProcessCopy& copy, ProcessSnapshot& snap) {
  snap.state = 'X';
  snap.diagnostics.push_back(make_diag(
      Diagnostic::Severity::error, copy.pid,
      fmt::format("pid {} {} while it was being captured: its stacks may be incomplete", copy.pid,
                  copy.death),
      copy.death.starts_with("exited")
          ? "the process ended by itself during the capture; dump it again if it should still run"
          : "the process is gone; the kernel log (dmesg) says whether the OOM killer ended it"));
}

// Threads in D state were not stopped: their user stacks are missing (each has a note and its
// kernel stack); one warning per process says so, so the run ends in 1, not 0.
void report_uninterruptible(const ProcessCopy& copy, ProcessSnapshot& snap) {
  std::vector<std::string> tids;
  for (const auto& c : copy.threads) {
    if (c.uninterruptible) tids.push_back(std::to_string(c.tid));
  }
  if (tids.empty()) return;
  snap.diagnostics.push_back(make_diag(
      Diagnostic::Severity::warning, copy.pid,
      fmt::format(
          "{} in uninterruptible sleep (D state) could not be stopped: {}{}",
          tids.size() == 1 ? "thread " + tids[0] : fmt::format("threads {}", fmt::join(tids, ", ")),
          tids.size() == 1 ? "its user stack is not shown" : "their user stacks are not shown",
          tids.size() < copy.threads.size() ? "; the other threads were captured" : ""),
      "a kernel stack (root only) shows the kernel call a thread waits in; dump again once it "
      "returns"));
}

// Frames of a module whose DWARF ran out of memory keep their names but have no file:line and
// no inline frames: each thread with such a frame says so, and the process gets one warning
// with the out-of-memory hint (the run then ends in 1, not 0).
void note_starved_modules(const std::set<std::string>& starved, ProcessSnapshot& snap) {
  if (starved.empty()) return;
  std::set<std::string> hit;
  for (auto& t : snap.threads) {
    std::set<std::string> mine;
    for (const FrameStack* stack : {&t.frames, &t.native_frames}) {
      for (const Frame& f : *stack) {
        if (starved.contains(f.build_id.empty() ? f.module : f.build_id)) mine.insert(f.module);
      }
    }
    for (const auto& m : mine) {
      t.notes.push_back(fmt::format(
          "frames in {} have no file:line or inline frames (or no name): loading its symbols "
          "and debug info ran out of memory",
          m));
    }
    hit.insert(mine.begin(), mine.end());
  }
  if (hit.empty()) return;
  snap.diagnostics.push_back(make_diag(
      Diagnostic::Severity::warning, snap.pid,
      fmt::format("out of memory while loading the symbols and debug info of {}: {} frames "
                  "have no file:line or inline frames (or no name)",
                  fmt::join(hit, ", "), hit.size() == 1 ? "its" : "their"),
      hints::out_of_memory()));
}

// --verbose: the pause, split by phase, so a slow one can be pinned on its phase.
std::string pause_line(const ProcessCopy& copy, const PauseTimes& p) {
  // Threads the quiet path copied asleep were not stopped.
  auto stopped = std::count_if(copy.threads.begin(), copy.threads.end(), [](const ThreadCopy& c) {
    return c.described.capture != std::optional<std::string>("bpf");
  });
  return fmt::format(
      "pid {}: paused {} us: {} threads stopped and registers read in {} us, {} KiB of "
      "stacks copied in {} us, Python frames walked in {} us ({} reads), resumed in {} us",
      copy.pid, p.pause_us, stopped, p.stopped_us, p.stack_bytes / 1024, p.stacks_us, p.python_us,
      p.python_reads,
      std::max<std::int64_t>(0, p.pause_us - p.stopped_us - (p.stacks_us + p.python_us)));
}

// The unwinder over the source's modules; null (and a warning) when it cannot be made.
NativeUnwinding make_native(ModuleSource& source, const CaptureOptions& options, int pid,
                            ProcessSnapshot& snap) {
  NativeUnwinding out;
  auto s = DwflSession::create(source);
  if (!s) {
    snap.diagnostics.push_back(make_diag(Diagnostic::Severity::warning, pid, s.error().what()));
    return out;
  }
  out.session = std::move(*s);
  auto u = make_unwinder(options.unwinder, source, *out.session);
  if (u) out.unwinder = std::move(*u);
  else snap.diagnostics.push_back(make_diag(Diagnostic::Severity::warning, pid, u.error().what()));
  return out;
}

// Symbolizes one thread's unwound frames into `t`, drops frames past its entry point and
// says when the stack is cut short.
void attach_native(const UnwindResult& u, DwflSession& session, SymbolCache& symbols,
                   ThreadSnapshot& t) {
  for (const auto& raw : u.frames) {
    auto frames = session.symbolize(raw, symbols);
    t.frames.insert(t.frames.end(), frames.begin(), frames.end());
  }
  // Nothing is above a thread's entry point: frames past it are garbage read beyond the
  // end of the stack (seen for threads caught right after clone3).
  auto root = std::find_if(t.frames.begin(), t.frames.end(), [](const Frame& f) {
    return f.function == "__clone3" || f.function == "__clone" || f.function == "clone3" ||
           f.function == "clone" || f.function == "_start";
  });
  if (root != t.frames.end()) t.frames.erase(root + 1, t.frames.end());
  t.incomplete = root == t.frames.end() && !u.stop_reason.empty() && !t.frames.empty();
  if (t.incomplete && u.frames.size() >= 2) {
    t.notes.push_back(fmt::format("stack incomplete: unwinding stopped after {} ({})",
                                  t.frames.back().function, u.stop_reason));
  }
  if (!u.stop_reason.empty() && u.frames.size() < 2) {
    t.notes.push_back("unwind stopped: " + u.stop_reason);
  } else if (u.frames.size() == 1 && !t.frames.empty() && t.frames.back().function != "_start") {
    // A lone frame is a stack cut short (e.g. a pc in code without unwind info, such as
    // clone3's syscall instruction), not a thread with one function: say so.
    t.notes.push_back(fmt::format("stack may be incomplete: unwinding stopped after {}",
                                  t.frames.back().function));
  } else if (root == t.frames.begin() && u.frames.size() >= 2) {
    // The innermost frame is a clone: a new thread right after clone3 (nothing above it) or
    // its parent inside the system call, whose callers the unwinder cannot find there (no CFI
    // on the syscall instruction; what it read past it was cut above). The stack cannot tell
    // which: say that it may be cut short.
    t.notes.push_back(fmt::format("stack may be incomplete: unwinding stopped after {}",
                                  t.frames.back().function));
  }
}

ProcessSnapshot finish_unguarded(ProcessCopy& copy, ModuleSource& source,
                                 const CaptureOptions& options, SymbolCache& symbols,
                                 NativeUnwinding* keep) {
  ProcessSnapshot snap = copy.process;
  for (auto& d : copy.diagnostics) snap.diagnostics.push_back(std::move(d));
  if (copy.pause) snap.pause_us = copy.pause->pause_us;
  if (!copy.death.empty()) report_death(copy, snap);
  report_uninterruptible(copy, snap);
  // Nothing stopped (the quiet path took every thread asleep): no pause to split.
  if (options.log != nullptr && copy.pause && copy.pause->pause_us > 0)
    options.log->push_back(pause_line(copy, *copy.pause));

  NativeUnwinding made;
  NativeUnwinding& native = keep != nullptr ? *keep : made;
  if (options.native && copy.registers_copied && !copy.threads.empty() && !native.unwinder)
    native = make_native(source, options, copy.pid, snap);

  // Unwind every copy (raw addresses only), by index: samples of one thread may share a tid.
  std::vector<std::optional<UnwindResult>> unwound(copy.threads.size());
  std::vector<std::string> unwind_errors(copy.threads.size());
  std::vector<int> tids;
  std::map<int, std::uint64_t> fs_bases;
  // Stack mappings by thread: from the registers, or (--nonblocking, no registers) from the
  // stack pointer the kernel shows for a thread blocked in a system call.
  std::map<int, std::pair<std::uint64_t, std::uint64_t>> stack_ranges;
  auto note_stack = [&](int tid, std::uint64_t sp) {
    for (const auto& m : source.mappings()) {
      if (m.contains(sp)) stack_ranges[tid] = {m.start, m.end};
    }
  };
  for (std::size_t i = 0; i < copy.threads.size(); ++i) {
    const ThreadCopy& c = copy.threads[i];
    tids.push_back(c.tid);
    if (c.regs) {
      fs_bases[c.tid] = c.regs->fs_base();
      note_stack(c.tid, c.regs->sp());
    } else if (!copy.registers_copied && c.described.stack_pointer) {
      note_stack(c.tid, *c.described.stack_pointer);
    }
    if (!c.regs || !native.unwinder) continue;
    auto res = native.unwinder->unwind(*c.regs, c.stack, c.tid);
    if (res) unwound[i] = std::move(*res);
    else unwind_errors[i] = res.error().what();
  }
  PythonByThread python;
  if (copy.python) python = decode_python(*copy.python, source, tids, fs_bases, stack_ranges);

  // Python-only output needs no native symbols for threads that run Python code.
  auto needs_native = [&](int tid) {
    return options.merge_native || !has_python_frames(python, tid);
  };
  if (native.session) {
    std::vector<const RawFrame*> to_name;
    for (std::size_t i = 0; i < unwound.size(); ++i) {
      if (!unwound[i] || !needs_native(copy.threads[i].tid)) continue;
      for (const auto& raw : unwound[i]->frames) to_name.push_back(&raw);
    }
    native.session->prepare(to_name, symbols);
  }

  for (std::size_t i = 0; i < copy.threads.size(); ++i) {
    ThreadCopy& c = copy.threads[i];
    ThreadSnapshot t = std::move(c.described);
    t.tid = c.tid;
    t.is_main = t.tid == copy.pid;
    if (!c.error.empty()) t.notes.push_back(c.error);
    if (!unwind_errors[i].empty()) t.notes.push_back(unwind_errors[i]);
    if (needs_native(c.tid) && native.session && unwound[i])
      attach_native(*unwound[i], *native.session, symbols, t);
    snap.threads.push_back(std::move(t));
  }

  if (copy.python) attach_python(*copy.python, python, source, options, snap);
  note_starved_modules(symbols.starved_modules(), snap);

  // Stable: samples of one thread keep their order.
  std::stable_sort(snap.threads.begin(), snap.threads.end(), [](const auto& a, const auto& b) {
    if (a.is_main != b.is_main) return a.is_main;
    return a.tid < b.tid;
  });
  return snap;
}

}  // namespace

NativeUnwinding::NativeUnwinding() = default;
NativeUnwinding::~NativeUnwinding() = default;
NativeUnwinding::NativeUnwinding(NativeUnwinding&&) noexcept = default;
NativeUnwinding& NativeUnwinding::operator=(NativeUnwinding&&) noexcept = default;

ProcessSnapshot finish_process(ProcessCopy copy, ModuleSource& source,
                               const CaptureOptions& options, SymbolCache& symbols,
                               NativeUnwinding* keep) {
  ProcessSnapshot snap;
  auto failure = failure_of([&] { snap = finish_unguarded(copy, source, options, symbols, keep); });
  if (!failure) return snap;
  if (keep != nullptr) *keep = NativeUnwinding{};  // not reused after a failure inside it
  // Keep what describes the process.
  snap = std::move(copy.process);
  snap.threads.clear();
  snap.diagnostics.push_back(make_diag(
      Diagnostic::Severity::error, copy.pid,
      fmt::format("{}: capture failed: {}", copy.what, failure->message), failure->hint()));
  return snap;
}

}  // namespace hangscan
