#include "capture/acquire.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <span>

#include "capture/python_capture.h"
#include "capture/quiet_source.h"
#include "target/exec_watch.h"
#include "target/frozen_memory.h"
#include "util/diagnostic.h"
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
                                const CaptureOptions& options, bool python,
                                const std::vector<int>& leave_alone) {
  std::size_t bytes = 0;
  for (const auto& [tid, t] : described) {
    bool stopped = std::find(leave_alone.begin(), leave_alone.end(), tid) == leave_alone.end();
    if (options.native && stopped) {
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
  copy.diagnostics.push_back(error_diagnostic(e, copy.pid));
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

// A thread's description taken before the stop; one that started since is described now.
ThreadSnapshot description_of(Target& target, std::map<int, ThreadSnapshot>& described, int tid) {
  auto it = described.find(tid);
  if (it != described.end()) return std::move(it->second);
  ThreadSnapshot t;
  t.tid = tid;
  target.describe_thread(t);
  return t;
}

// The quiet threads' stacks to the end of their mappings (at most `max_bytes`): the top the
// source copied, then the rest read in one batch. The threads sleep, so their stacks do not
// move; the sleep sequences checked afterwards prove it.
void complete_quiet_stacks(Target& target, std::size_t max_bytes, std::vector<QuietThread>& quiet) {
  std::vector<MemoryReader::ReadOp> ops;
  std::vector<std::size_t> owners;
  for (std::size_t i = 0; i < quiet.size(); ++i) {
    StackCopy& s = quiet[i].stack;
    std::size_t have = s.bytes.size();
    std::size_t want = stack_extent(target, s.start, max_bytes);
    if (want <= have || have == 0) continue;
    s.bytes.resize(want);
    ops.push_back(MemoryReader::ReadOp{s.start + have, s.bytes.data() + have, want - have, 0});
    owners.push_back(i);
  }
  target.memory().read_many(ops);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    StackCopy& s = quiet[owners[i]].stack;
    s.bytes.resize(s.bytes.size() - ops[i].len + ops[i].got);
  }
}

// The thread copies of the quiet threads, described before the take.
void add_quiet_threads(Target& target, std::vector<QuietThread>& quiet, const std::string& how,
                       std::map<int, ThreadSnapshot>& described, ProcessCopy& copy) {
  for (QuietThread& q : quiet) {
    ThreadCopy& c = copy.threads.emplace_back();
    c.tid = q.tid;
    c.regs = q.regs;
    c.stack = std::move(q.stack);  // moved with its storage: the Python pages point at it
    c.described = description_of(target, described, c.tid);
    c.described.capture = how;
  }
}

// One capture: the threads in `quiet` (taken asleep by a quiet source) are left alone, every
// other thread is stopped (none when all sleep), then the stacks and the Python walk are copied
// and the stopped threads released. `quiet` null: the ptrace freeze of every thread. `python`:
// the interpreter located already (with the frames the source took), null: located here.
ProcessCopy acquire_once(Target& target, const CaptureOptions& options,
                         std::map<int, ThreadSnapshot> described, QuietTake* quiet,
                         const std::string& how, std::shared_ptr<PythonCopy> python) {
  ProcessCopy copy;
  copy.pid = target.pid();
  copy.what = target.describe();
  target.describe_process(copy.process);
  std::vector<int> leave_alone;
  if (quiet != nullptr) {
    for (const QuietThread& q : quiet->asleep) leave_alone.push_back(q.tid);
    complete_quiet_stacks(target, options.native ? options.max_stack_bytes : 0, quiet->asleep);
  }
  const bool stop = quiet == nullptr || !quiet->awake.empty();

  if (!python) python = locate_python(target, options);
  const bool prepare = target.is_live() && !options.nonblocking;
  std::vector<std::uint64_t> python_pages;
  if (prepare) python_pages = probe_python_pages(*python, target, options.locals);
  auto buffer = std::make_unique<FreezeBuffer>(
      prepare ? freeze_buffer_bytes(target, described, options, python->reader != nullptr,
                                    leave_alone) +
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
  std::unique_ptr<Freeze> freeze;
  const auto before = target.is_live() ? exec_mark(copy.pid) : std::nullopt;  // names an exec
  if (stop) {
    auto frozen = target.freeze_except(Deadline::after(options.freeze_timeout), leave_alone);
    if (!frozen) {
      add_error(copy, frozen.error());
      // After an exec the descriptions are the old program's threads, which are gone.
      if (frozen.error().hint != hints::run_again_after_exec()) copy_descriptions(described, copy);
      return copy;
    }
    freeze = std::move(*frozen);
  }
  // Only copies are made while the target is stopped, into prefaulted memory.
  static const std::vector<FrozenThread> kNone;
  const std::vector<FrozenThread>& frozen = freeze ? freeze->threads() : kNone;
  PauseTimes times;
  std::int64_t t0 = monotonic_us();
  auto pages = std::make_unique<PageCacheMemory>(target.memory(), buffer.get());
  views.resize(frozen.size());
  if (options.native) copy_stacks(target, options.max_stack_bytes, *buffer, frozen, views);
  for (const auto& v : views) {
    pages->add_copy(v.start, v.bytes);
    times.stack_bytes += v.bytes.size();
  }
  if (quiet != nullptr) {
    for (const QuietThread& q : quiet->asleep) pages->add_copy(q.stack.start, q.stack.bytes);
  }
  std::int64_t t1 = monotonic_us();
  pages->prefetch(python_pages);
  walk_python_frozen(*python, std::move(pages), options.locals);
  std::int64_t t2 = monotonic_us();
  if (options.while_frozen) options.while_frozen();
  if (freeze && freeze->executed()) {
    freeze->release();
    add_error(copy, exec_error(copy.pid, before));
    return copy;
  }
  if (freeze) {
    copy.death = freeze->death();
    times.pause_us = freeze->release();
    times.stopped_us = freeze->stopped_us();
    times.stacks_us = t1 - t0;
    times.python_us = t2 - t1;
  }

  // The target runs again.
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
    c.described = description_of(target, described, c.tid);
    if (target.is_live()) c.described.capture = "ptrace";
  }
  if (quiet != nullptr) add_quiet_threads(target, quiet->asleep, how, described, copy);
  if (quiet != nullptr) {
    std::sort(copy.threads.begin(), copy.threads.end(),
              [](const ThreadCopy& a, const ThreadCopy& b) { return a.tid < b.tid; });
  }
  // Threads that exited between the description and the freeze are gone: they are dropped.
  if (python->pages) python->buffer = std::move(buffer);
  copy.python = std::move(python);
  return copy;
}

// The threads of `take` whose sleep sequence moved since (or that no longer sleep): they ran
// while being copied, so their copies may be torn.
Result<std::vector<int>> woke_since(QuietSource& source, const QuietTake& take) {
  auto now = source.asleep_now();
  if (!now) return std::move(now).error();
  std::vector<int> woke;
  for (const QuietThread& q : take.asleep) {
    auto it = now->find(q.tid);
    if (it == now->end() || it->second != q.seq) woke.push_back(q.tid);
  }
  return woke;
}

// The quiet path: blocked threads copied asleep, running ones stopped. A thread that woke
// during its copy is retaken once; one that wakes again is stopped with ptrace on the next
// attempt. If threads still wake after that, the whole process is frozen as before.
std::optional<ProcessCopy> acquire_quiet(Target& target, const CaptureOptions& options,
                                         const std::map<int, ThreadSnapshot>& described,
                                         QuietSource& source) {
  std::vector<int> to_stop;  // threads that woke twice
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::shared_ptr<PythonCopy> python = locate_python(target, options);
    auto take = source.take();
    if (!take) return std::nullopt;
    // The target's own rights decide as for ptrace: memory we may not read (another user's
    // process, no CAP_SYS_PTRACE) sends the capture down the ptrace path and its error.
    std::uint64_t word = 0;
    if (!take->asleep.empty() && !target.memory().read_obj(take->asleep.front().stack.start, word))
      return std::nullopt;
    std::erase_if(take->asleep, [&](const QuietThread& q) {
      bool stop = std::find(to_stop.begin(), to_stop.end(), q.tid) != to_stop.end();
      if (stop) take->awake.push_back(q.tid);
      return stop;
    });
    ProcessCopy copy =
        acquire_once(target, options, described, &*take, source.name(), std::move(python));
    auto woke = woke_since(source, *take);
    if (!woke) return std::nullopt;
    if (options.log != nullptr)
      options.log->push_back(fmt::format(
          "pid {}: {} threads copied asleep ({}), {} stopped{}", target.pid(), take->asleep.size(),
          source.name(), take->awake.size(), woke->empty() ? "" : ", some woke during the copy"));
    if (woke->empty() || !copy.diagnostics.empty()) return copy;
    if (attempt > 0) to_stop.insert(to_stop.end(), woke->begin(), woke->end());
  }
  return std::nullopt;
}

}  // namespace

ProcessCopy acquire_process(Target& target, const CaptureOptions& options) {
  // Loading the quiet source (BPF: parsing the kernel's BTF, the verifier) takes tens of
  // milliseconds: the run's session loads it once, started before discovery; a capture
  // without one starts its own here, while the threads are described.
  std::shared_ptr<QuietSession> session;
  if (options.quiet && target.is_live() && !options.nonblocking)
    session = options.quiet_session ? options.quiet_session : QuietSession::start();
  // Describe threads before stopping them: their states and wait channels are then the ones
  // the program was in, not ptrace-stop.
  std::map<int, ThreadSnapshot> described;
  for (int tid : target.thread_ids()) {
    ThreadSnapshot t;
    t.tid = tid;
    target.describe_thread(t);
    described.emplace(tid, std::move(t));
  }
  // A process in a job-control or ptrace stop (or entering one) is captured as before: its
  // threads change state under the take, and a stopped thread is not asleep in a call.
  bool stopping = std::any_of(described.begin(), described.end(), [](const auto& d) {
    return d.second.state == 'T' || d.second.state == 't';
  });
  if (session && !stopping) {
    auto source = session->open(target.pid(), options.log);
    if (source) {
      if (auto copy = acquire_quiet(target, options, described, **source)) return std::move(*copy);
    } else if (options.log != nullptr) {
      options.log->push_back(
          fmt::format("pid {}: quiet dump off: {}", target.pid(), source.error().what()));
    }
  }
  return acquire_once(target, options, std::move(described), nullptr, "ptrace", nullptr);
}

}  // namespace hangscan
