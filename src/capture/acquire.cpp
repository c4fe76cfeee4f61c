#include "capture/acquire.h"

#include <algorithm>
#include <map>
#include <span>

#include "capture/python_capture.h"
#include "target/exec_watch.h"
#include "target/frozen_memory.h"
#include "util/hints.h"

namespace hangscan {

namespace {

// The bytes a freeze will copy of a thread's stack: from its stack pointer to the end of its
// mapping, at most `max_bytes`.
std::size_t stack_extent(const Target& target, std::uint64_t sp, std::size_t max_bytes) {
  for (const auto& m : target.mappings()) {
    if (m.contains(sp))
      return static_cast<std::size_t>(std::min<std::uint64_t>(m.end - sp, max_bytes));
  }
  return 0;
}

constexpr std::size_t kUnknownStackGuess = 64 * 1024;
constexpr std::size_t kPythonPagesPerThread = 8;

// How much a freeze of this target will write, so that it is prefaulted before the stop (see
// target/frozen_memory.h): each stack from the stack pointer /proc showed (threads in a system
// call; a guess for the others) and a few pages per thread for the Python walk.
std::size_t freeze_buffer_bytes(const Target& target,
                                const std::map<int, ThreadSnapshot>& described,
                                const CaptureOptions& options, bool python) {
  std::size_t bytes = 0;
  for (const auto& [tid, t] : described) {
    if (options.native) {
      std::size_t known =
          t.stack_pointer ? stack_extent(target, *t.stack_pointer, options.max_stack_bytes) : 0;
      // A thread seen in a system call may have returned and called deeper by the stop.
      bytes +=
          known != 0 ? known + 16 * 1024 : std::min(kUnknownStackGuess, options.max_stack_bytes);
    }
    if (python) bytes += kPythonPagesPerThread * PageCacheMemory::kPageSize;
  }
  if (python) bytes += 64 * PageCacheMemory::kPageSize;
  return bytes;
}

// One thread's stack copy while the target is stopped: in the freeze buffer, or (when the
// buffer was too small) in `heap`. Small, so that the freeze writes little besides the copies.
struct StackView {
  std::uint64_t start = 0;
  std::span<const std::uint8_t> bytes;
  std::vector<std::uint8_t> heap;
};

// Copies the top of every thread's stack (short where memory is unmapped) into prefaulted
// memory, in one batch of reads. `views` has one entry per frozen thread.
void copy_stacks(Target& target, std::size_t max_bytes, FreezeBuffer& buffer,
                 const std::vector<FrozenThread>& threads, std::vector<StackView>& views) {
  std::vector<MemoryReader::ReadOp> ops;
  std::vector<std::size_t> owners;
  ops.reserve(threads.size());
  owners.reserve(threads.size());
  for (std::size_t i = 0; i < threads.size(); ++i) {
    if (!threads[i].regs) continue;
    std::uint64_t sp = threads[i].regs->sp();
    std::size_t len = stack_extent(target, sp, max_bytes);
    if (len == 0) continue;
    std::span<std::uint8_t> out = buffer.take(len);
    if (out.empty()) {
      views[i].heap.resize(len);
      out = views[i].heap;
    }
    views[i].start = sp;
    ops.push_back(MemoryReader::ReadOp{sp, out.data(), out.size(), 0});
    owners.push_back(i);
  }
  target.memory().read_many(ops);
  for (std::size_t i = 0; i < ops.size(); ++i)
    views[owners[i]].bytes = std::span<const std::uint8_t>(ops[i].buf, ops[i].got);
}

void add_error(ProcessCopy& copy, const Error& e) {
  Diagnostic d;
  d.severity = Diagnostic::Severity::error;
  d.message = e.what();
  d.hint = e.hint;
  d.pid = copy.pid;
  copy.diagnostics.push_back(std::move(d));
}

// The threads of a copy made without a stop: their descriptions only.
void copy_descriptions(std::map<int, ThreadSnapshot>& described, ProcessCopy& copy) {
  copy.registers_copied = false;
  for (auto& [tid, t] : described) {
    ThreadCopy& c = copy.threads.emplace_back();
    c.tid = tid;
    c.described = std::move(t);
  }
}

}  // namespace

ProcessCopy acquire_process(Target& target, const CaptureOptions& options) {
  ProcessCopy copy;
  copy.pid = target.pid();
  copy.what = target.describe();
  target.describe_process(copy.process);

  // Describe threads before stopping them: their states and wait channels are then the ones
  // the program was in, not ptrace-stop.
  std::map<int, ThreadSnapshot> described;
  for (int tid : target.thread_ids()) {
    ThreadSnapshot t;
    t.tid = tid;
    target.describe_thread(t);
    described.emplace(tid, std::move(t));
  }

  std::shared_ptr<PythonCopy> python = locate_python(target, options);
  const bool prepare = target.is_live() && !options.nonblocking;
  std::vector<std::uint64_t> python_pages;
  if (prepare) python_pages = probe_python_pages(*python, target, options.locals);
  auto buffer = std::make_unique<FreezeBuffer>(
      prepare ? freeze_buffer_bytes(target, described, options, python->reader != nullptr) +
                    python_pages.size() * PageCacheMemory::kPageSize
              : 0);

  if (options.nonblocking) {
    walk_python_nonblocking(*python, target, options.locals, described);
    copy_descriptions(described, copy);
    copy.python = std::move(python);
    return copy;
  }
  std::vector<StackView> views;
  views.reserve(described.size() + 16);
  auto freeze = target.freeze(Deadline::after(options.freeze_timeout));
  if (!freeze) {
    add_error(copy, freeze.error());
    // After an exec the descriptions are the old program's threads, which are gone.
    if (freeze.error().hint != hints::run_again_after_exec()) copy_descriptions(described, copy);
    return copy;
  }
  // Only copies are made while the target is stopped, into prefaulted memory.
  const std::vector<FrozenThread>& frozen = (*freeze)->threads();
  PauseTimes times;
  std::int64_t t0 = monotonic_us();
  auto pages = std::make_unique<PageCacheMemory>(target.memory(), buffer.get());
  views.resize(frozen.size());
  if (options.native) copy_stacks(target, options.max_stack_bytes, *buffer, frozen, views);
  for (const auto& v : views) {
    pages->add_copy(v.start, v.bytes);
    times.stack_bytes += v.bytes.size();
  }
  std::int64_t t1 = monotonic_us();
  pages->prefetch(python_pages);
  walk_python_frozen(*python, std::move(pages), options.locals);
  std::int64_t t2 = monotonic_us();
  if (options.while_frozen) options.while_frozen();
  if ((*freeze)->executed()) {
    (*freeze)->release();
    add_error(copy, exec_error(copy.pid));
    return copy;
  }
  copy.death = (*freeze)->death();
  times.pause_us = (*freeze)->release();

  // The target runs again.
  times.stopped_us = (*freeze)->stopped_us();
  times.stacks_us = t1 - t0;
  times.python_us = t2 - t1;
  times.python_reads = python_base_reads(*python);
  copy.pause = times;
  copy.threads.resize(frozen.size());
  for (std::size_t i = 0; i < frozen.size(); ++i) {
    ThreadCopy& c = copy.threads[i];
    StackView& v = views[i];
    c.tid = frozen[i].tid;
    c.regs = frozen[i].regs;
    c.error = frozen[i].error;
    c.uninterruptible = frozen[i].uninterruptible;
    c.stack.start = v.start;
    // A stack copied into the freeze buffer moves to the thread's own bytes; one copied to the
    // heap moves with its storage, which the Python pages keep pointing at.
    if (v.heap.empty()) {
      c.stack.bytes.assign(v.bytes.begin(), v.bytes.end());
    } else {
      v.heap.resize(v.bytes.size());
      c.stack.bytes = std::move(v.heap);
    }
    // Threads that started between the description and the freeze are described now.
    auto it = described.find(c.tid);
    if (it != described.end()) {
      c.described = std::move(it->second);
    } else {
      c.described.tid = c.tid;
      target.describe_thread(c.described);
    }
  }
  // Threads that exited between the description and the freeze are gone: they are dropped.
  if (python->pages) python->buffer = std::move(buffer);
  copy.python = std::move(python);
  return copy;
}

}  // namespace hangscan
