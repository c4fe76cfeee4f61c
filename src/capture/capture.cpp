#include "capture/capture.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "capture/python_capture.h"
#include "target/frozen_memory.h"
#include "unwind/dwfl_session.h"
#include "util/contain.h"

namespace hangscan {

namespace {

Diagnostic make_diag(Diagnostic::Severity sev, const Target& target, std::string msg,
                     std::string hint = {}, std::optional<int> tid = std::nullopt) {
  Diagnostic d;
  d.severity = sev;
  d.message = std::move(msg);
  d.hint = std::move(hint);
  d.pid = target.pid();
  d.tid = tid;
  return d;
}

// The bytes a freeze will copy of a thread's stack: from its stack pointer to the end of its
// mapping, at most `max_bytes`.
std::size_t stack_extent(const Target& target, std::uint64_t sp, std::size_t max_bytes) {
  for (const auto& m : target.mappings()) {
    if (m.contains(sp)) return static_cast<std::size_t>(std::min<std::uint64_t>(m.end - sp, max_bytes));
  }
  return 0;
}

constexpr std::size_t kUnknownStackGuess = 64 * 1024;
constexpr std::size_t kPythonPagesPerThread = 8;

// How much a freeze of this target will write, so that it is prefaulted before the stop (see
// target/frozen_memory.h): each stack from the stack pointer /proc showed (threads in a system
// call; a guess for the others) and a few pages per thread for the Python walk.
std::size_t freeze_buffer_bytes(const Target& target, const std::map<int, ThreadSnapshot>& described,
                                const CaptureOptions& options, bool python) {
  std::size_t bytes = 0;
  for (const auto& [tid, t] : described) {
    if (options.native) {
      std::size_t known = t.stack_pointer ? stack_extent(target, *t.stack_pointer, options.max_stack_bytes) : 0;
      // A thread seen in a system call may have returned and called deeper by the stop.
      bytes += known != 0 ? known + 16 * 1024 : std::min(kUnknownStackGuess, options.max_stack_bytes);
    }
    if (python) bytes += kPythonPagesPerThread * PageCacheMemory::kPageSize;
  }
  if (python) bytes += 64 * PageCacheMemory::kPageSize;
  return bytes;
}

struct FrozenCopy {
  int tid = 0;
  std::optional<Registers> regs;
  std::uint64_t stack_start = 0;
  std::span<const std::uint8_t> stack_view;   // in the freeze buffer, or in stack_heap
  std::vector<std::uint8_t> stack_heap;       // when the buffer was too small
  StackCopy stack;                            // filled after the target runs again
  std::string error;
};

// Copies the top of every thread's stack (short where memory is unmapped) into prefaulted
// memory, in one batch of reads.
void copy_stacks(Target& target, std::size_t max_bytes, FreezeBuffer& buffer,
                 std::vector<FrozenCopy>& copies) {
  std::vector<MemoryReader::ReadOp> ops;
  std::vector<FrozenCopy*> owners;
  for (auto& c : copies) {
    if (!c.regs) continue;
    std::uint64_t sp = c.regs->sp();
    std::size_t len = stack_extent(target, sp, max_bytes);
    if (len == 0) continue;
    std::span<std::uint8_t> out = buffer.take(len);
    if (out.empty()) {
      c.stack_heap.resize(len);
      out = c.stack_heap;
    }
    c.stack_start = sp;
    ops.push_back(MemoryReader::ReadOp{sp, out.data(), out.size(), 0});
    owners.push_back(&c);
  }
  target.memory().read_many(ops);
  for (std::size_t i = 0; i < ops.size(); ++i)
    owners[i]->stack_view = std::span<const std::uint8_t>(ops[i].buf, ops[i].got);
}

// A process that died while stopped: what was copied before is exact, the rest is missing.
// It is reported dead (the suspects name it) with an error, so the run does not end in 0.
void report_death(const Target& target, const std::string& how, ProcessSnapshot& snap) {
  snap.state = 'X';
  snap.diagnostics.push_back(make_diag(
      Diagnostic::Severity::error, target,
      fmt::format("pid {} {} while it was being captured: its stacks may be incomplete", target.pid(), how),
      "the process is gone; the kernel log (dmesg) says whether the OOM killer ended it"));
}

// Threads in D state were not stopped: their user stacks are missing (each has a note and its
// kernel stack); one warning per process says so, so the run ends in 1, not 0.
void report_uninterruptible(const std::vector<FrozenThread>& threads, const Target& target,
                            ProcessSnapshot& snap) {
  std::vector<std::string> tids;
  for (const auto& ft : threads) {
    if (ft.uninterruptible) tids.push_back(std::to_string(ft.tid));
  }
  if (tids.empty()) return;
  snap.diagnostics.push_back(make_diag(
      Diagnostic::Severity::warning, target,
      fmt::format("{} in uninterruptible sleep (D state) could not be stopped: {}{}",
                  tids.size() == 1 ? "thread " + tids[0] : fmt::format("threads {}", fmt::join(tids, ", ")),
                  tids.size() == 1 ? "its user stack is not shown" : "their user stacks are not shown",
                  tids.size() < threads.size() ? "; the other threads were captured" : ""),
      "a kernel stack (root only) shows the kernel call a thread waits in; dump again once it returns"));
}

ProcessSnapshot capture_unguarded(Target& target, const CaptureOptions& options,
                                  SymbolCache& symbols) {
  ProcessSnapshot snap;
  target.describe_process(snap);

  // Describe threads before stopping them: their states and wait channels are then the ones
  // the program was in, not ptrace-stop.
  std::map<int, ThreadSnapshot> described;
  for (int tid : target.thread_ids()) {
    ThreadSnapshot t;
    t.tid = tid;
    target.describe_thread(t);
    described.emplace(tid, std::move(t));
  }

  PythonCapture python(target, options);
  const bool prepare = target.is_live() && !options.nonblocking;
  std::vector<std::uint64_t> python_pages;
  if (prepare) python_pages = python.probe_pages();
  FreezeBuffer buffer(prepare ? freeze_buffer_bytes(target, described, options, python.active()) +
                                    python_pages.size() * PageCacheMemory::kPageSize
                              : 0);

  std::vector<FrozenCopy> copies;
  if (options.nonblocking) {
    python.walk_nonblocking();
  } else {
    copies.reserve(described.size() + 16);
    auto freeze = target.freeze(Deadline::after(options.freeze_timeout));
    if (!freeze) {
      const Error& e = freeze.error();
      snap.diagnostics.push_back(
          make_diag(Diagnostic::Severity::error, target, e.what(), e.hint));
      for (auto& [tid, t] : described) snap.threads.push_back(std::move(t));
      return snap;
    }
    // Only copies are made while the target is stopped, into prefaulted memory.
    std::int64_t t0 = monotonic_us();
    auto pages = std::make_unique<PageCacheMemory>(target.memory(), &buffer);
    std::size_t stack_bytes = 0;
    for (const auto& ft : (*freeze)->threads()) {
      FrozenCopy& c = copies.emplace_back();
      c.tid = ft.tid;
      c.regs = ft.regs;
      c.error = ft.error;
    }
    if (options.native) copy_stacks(target, options.max_stack_bytes, buffer, copies);
    for (const auto& c : copies) {
      pages->add_copy(c.stack_start, c.stack_view);
      stack_bytes += c.stack_view.size();
    }
    std::int64_t t1 = monotonic_us();
    pages->prefetch(python_pages);
    python.walk_frozen(std::move(pages));
    std::int64_t t2 = monotonic_us();
    if (options.while_frozen) options.while_frozen();
    const std::string died = (*freeze)->death();
    snap.pause_us = (*freeze)->release();
    if (!died.empty()) report_death(target, died, snap);
    report_uninterruptible((*freeze)->threads(), target, snap);
    if (options.log != nullptr) {
      std::int64_t stopped = (*freeze)->stopped_us();
      options.log->push_back(fmt::format(
          "pid {}: paused {} us: {} threads stopped and registers read in {} us, {} KiB of "
          "stacks copied in {} us, Python frames walked in {} us ({} reads), resumed in {} us",
          target.pid(), snap.pause_us, copies.size(), stopped, stack_bytes / 1024, t1 - t0,
          t2 - t1, python.base_reads(),
          std::max<std::int64_t>(0, snap.pause_us - stopped - (t2 - t0))));
    }
    for (auto& c : copies) {
      c.stack.start = c.stack_start;
      c.stack.bytes.assign(c.stack_view.begin(), c.stack_view.end());
    }
  }

  // Everything below runs while the target runs again.
  std::unique_ptr<DwflSession> session;
  std::unique_ptr<Unwinder> unwinder;
  if (options.native && !copies.empty()) {
    auto s = DwflSession::create(target);
    if (s) {
      session = std::move(*s);
      auto u = make_unwinder(options.unwinder, target, *session);
      if (u) unwinder = std::move(*u);
      else snap.diagnostics.push_back(make_diag(Diagnostic::Severity::warning, target, u.error().what()));
    } else {
      snap.diagnostics.push_back(make_diag(Diagnostic::Severity::warning, target, s.error().what()));
    }
  }

  // Unwind every copy (raw addresses only).
  std::map<int, UnwindResult> unwound;
  std::map<int, std::string> unwind_errors;
  std::vector<int> tids;
  std::map<int, std::uint64_t> fs_bases;
  for (const auto& c : copies) {
    tids.push_back(c.tid);
    if (c.regs) fs_bases[c.tid] = c.regs->fs_base();
    if (!c.regs || !unwinder) continue;
    auto res = unwinder->unwind(*c.regs, c.stack, c.tid);
    if (res) unwound[c.tid] = std::move(*res);
    else unwind_errors[c.tid] = res.error().what();
  }
  // Stack mappings by thread: from the registers, or (--nonblocking, no registers) from the
  // stack pointer the kernel shows for a thread blocked in a system call.
  std::map<int, std::pair<std::uint64_t, std::uint64_t>> stack_ranges;
  auto note_stack = [&](int tid, std::uint64_t sp) {
    for (const auto& m : target.mappings()) {
      if (m.contains(sp)) stack_ranges[tid] = {m.start, m.end};
    }
  };
  for (const auto& c : copies) {
    if (c.regs) note_stack(c.tid, c.regs->sp());
  }
  if (options.nonblocking) {
    for (const auto& [tid, t] : described) {
      tids.push_back(tid);
      if (t.stack_pointer) note_stack(tid, *t.stack_pointer);
    }
  }
  python.decode(tids, fs_bases, stack_ranges);

  // Python-only output needs no native symbols for threads that run Python code.
  auto needs_native = [&](int tid) { return options.merge_native || !python.has_python_frames(tid); };
  if (session) {
    std::vector<const RawFrame*> to_name;
    for (const auto& [tid, u] : unwound) {
      if (!needs_native(tid)) continue;
      for (const auto& raw : u.frames) to_name.push_back(&raw);
    }
    session->prepare(to_name, symbols);
  }

  for (auto& c : copies) {
    ThreadSnapshot t;
    auto it = described.find(c.tid);
    if (it != described.end()) {
      t = std::move(it->second);
      described.erase(it);
    } else {
      t.tid = c.tid;
      target.describe_thread(t);
    }
    t.is_main = t.tid == target.pid();
    if (!c.error.empty()) t.notes.push_back(c.error);
    if (auto e = unwind_errors.find(c.tid); e != unwind_errors.end()) t.notes.push_back(e->second);
    bool need_native = needs_native(c.tid);
    auto u = unwound.find(c.tid);
    if (need_native && session && u != unwound.end()) {
      for (const auto& raw : u->second.frames) {
        auto frames = session->symbolize(raw, symbols);
        t.frames.insert(t.frames.end(), frames.begin(), frames.end());
      }
      // Nothing is above a thread's entry point: frames past it are garbage read beyond the
      // end of the stack (seen for threads caught right after clone3).
      auto root = std::find_if(t.frames.begin(), t.frames.end(), [](const Frame& f) {
        return f.function == "__clone3" || f.function == "__clone" || f.function == "clone3" ||
               f.function == "clone" || f.function == "_start";
      });
      if (root != t.frames.end()) t.frames.erase(root + 1, t.frames.end());
      t.incomplete = root == t.frames.end() && !u->second.stop_reason.empty() && !t.frames.empty();
      if (t.incomplete && u->second.frames.size() >= 2) {
        t.notes.push_back(fmt::format("stack incomplete: unwinding stopped after {} ({})",
                                      t.frames.back().function, u->second.stop_reason));
      }
      if (!u->second.stop_reason.empty() && u->second.frames.size() < 2) {
        t.notes.push_back("unwind stopped: " + u->second.stop_reason);
      } else if (u->second.frames.size() == 1 && !t.frames.empty() &&
                 t.frames.back().function != "_start") {
        // A lone frame is a stack cut short (e.g. a pc in code without unwind info, such as
        // clone3's syscall instruction), not a thread with one function: say so.
        t.notes.push_back(fmt::format("stack may be incomplete: unwinding stopped after {}",
                                      t.frames.back().function));
      }
    }
    snap.threads.push_back(std::move(t));
  }
  // Threads that exited between the description and the freeze are gone: drop them. With
  // --nonblocking there was no freeze: keep every described thread.
  if (options.nonblocking) {
    for (auto& [tid, t] : described) snap.threads.push_back(std::move(t));
  }

  python.attach(snap);

  std::sort(snap.threads.begin(), snap.threads.end(), [](const auto& a, const auto& b) {
    if (a.is_main != b.is_main) return a.is_main;
    return a.tid < b.tid;
  });
  return snap;
}

}  // namespace

ProcessSnapshot capture_process(Target& target, const CaptureOptions& options,
                                SymbolCache& symbols) {
  ProcessSnapshot snap;
  auto failure = failure_of([&] { snap = capture_unguarded(target, options, symbols); });
  if (!failure) return snap;
  // The freeze (RAII) has already let the target go. Keep what describes the process.
  snap = ProcessSnapshot{};
  (void)failure_of([&] { target.describe_process(snap); });
  snap.threads.clear();
  snap.diagnostics.push_back(make_diag(Diagnostic::Severity::error, target,
                                       fmt::format("{}: capture failed: {}", target.describe(), *failure),
                                       internal_error_hint()));
  return snap;
}

}  // namespace hangscan
