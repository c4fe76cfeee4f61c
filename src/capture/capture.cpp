#include "capture/capture.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "capture/python_capture.h"
#include "unwind/dwfl_session.h"

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

// Copies the top of a thread's stack: from the stack pointer to the end of its mapping,
// at most `max_bytes`. Reads are short where memory is unmapped.
StackCopy copy_stack(Target& target, const Registers& regs, std::size_t max_bytes) {
  StackCopy copy;
  std::uint64_t sp = regs.sp();
  std::uint64_t end = sp + max_bytes;
  for (const auto& m : target.mappings()) {
    if (m.contains(sp)) {
      end = std::min(end, m.end);
      break;
    }
  }
  if (end <= sp) return copy;
  copy.start = sp;
  copy.bytes.resize(end - sp);
  std::size_t got = target.memory().read(sp, copy.bytes.data(), copy.bytes.size());
  copy.bytes.resize(got);
  return copy;
}

struct FrozenCopy {
  int tid = 0;
  std::optional<Registers> regs;
  StackCopy stack;
  std::string error;
};

}  // namespace

ProcessSnapshot capture_process(Target& target, const CaptureOptions& options,
                                SymbolCache& symbols) {
  ProcessSnapshot snap;
  target.describe_process(snap);

  PythonCapture python(target, options);

  // Describe threads before stopping them: their states and wait channels are then the ones
  // the program was in, not ptrace-stop.
  std::map<int, ThreadSnapshot> described;
  for (int tid : target.thread_ids()) {
    ThreadSnapshot t;
    t.tid = tid;
    target.describe_thread(t);
    described.emplace(tid, std::move(t));
  }

  std::vector<FrozenCopy> copies;
  if (options.nonblocking) {
    python.walk_nonblocking();
  } else {
    auto freeze = target.freeze(Deadline::after(options.freeze_timeout));
    if (!freeze) {
      const Error& e = freeze.error();
      snap.diagnostics.push_back(
          make_diag(Diagnostic::Severity::error, target, e.what(), e.hint));
      for (auto& [tid, t] : described) snap.threads.push_back(std::move(t));
      return snap;
    }
    // Only copies are made while the target is stopped.
    for (const auto& ft : (*freeze)->threads()) {
      FrozenCopy c;
      c.tid = ft.tid;
      c.regs = ft.regs;
      c.error = ft.error;
      if (ft.regs && options.native) c.stack = copy_stack(target, *ft.regs, options.max_stack_bytes);
      copies.push_back(std::move(c));
    }
    python.walk_frozen();
    snap.pause_us = (*freeze)->release();
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
    // Python-only output needs no native symbols for threads that run Python code.
    bool need_native = options.merge_native || !python.has_python_frames(c.tid);
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

}  // namespace hangscan
