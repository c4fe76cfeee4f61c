#include "watch/watcher.h"

#include <time.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "capture/capture.h"
#include "proc/proc_files.h"
#include "target/live_target.h"
#include "util/diagnostic.h"
#include "util/pattern.h"
#include "watch/watch_groups.h"

namespace hangscan {

namespace {

constexpr std::int64_t kRediscoverNs = 1'000'000'000;
constexpr std::int64_t kFoldNs = 5'000'000'000;

// The ptrace fallback copies no sleeping stack: a pool worker's waits get its threads' Python
// frames, read without stopping it (as `dump --nonblocking` reads them), which say whether it
// is idle in its pool's loop and where in the user's task it is (group/roles.h).
void python_of_waiting_worker(int pid, std::vector<WaitView>& waits) {
  auto target = open_live_target(pid, true);
  if (!target) return;
  CaptureOptions o;
  o.nonblocking = true;
  o.native = false;
  o.kernel_stacks = false;
  SymbolCache symbols;
  ProcessSnapshot s = capture_process(**target, o, symbols);
  for (WaitView& w : waits) {
    auto t = std::find_if(s.threads.begin(), s.threads.end(),
                          [&](const ThreadSnapshot& x) { return x.tid == w.tid; });
    if (!w.ongoing || !w.frames.empty() || t == s.threads.end()) continue;
    for (const Frame& f : t->frames)
      if (f.kind == FrameKind::python) w.frames.push_back(f);
  }
}

constexpr std::size_t kFoldRecords = 2048;  // ~35 MiB of stack copies
// How often /proc/PID/io is read for the watchdog's progress (a few us per process).
constexpr std::int64_t kIoCheckNs = 250'000'000;
// Looks for the interpreter of a program that has just begun (one a second, see setup_python).
constexpr int kPythonLooks = 5;

// x86-64 system calls whose first argument is a file descriptor.
bool takes_fd(long nr) {
  static const std::set<long> calls = {0,   1,   3,   5,   8,   16,  17,  18,  19, 20, 40,
                                       42,  43,  44,  45,  46,  47,  48,  72,  73, 74, 77,
                                       217, 232, 281, 288, 295, 296, 299, 307, 441};
  return calls.count(nr) != 0;
}

// The stack's identity for counting, as a profile counts: every frame's function and source
// line (the same line of a function is the same place, whichever instruction the sample hit),
// or, for a frame without a name, its module and offset (built by hand: every sample needs
// one); and whether it is cut short (then counted apart: the same frames with their callers
// missing are not the same stack). The frames shown for a stack are its first sample's.
std::string stack_key(const SampledFrames& sampled) {
  std::string key = sampled.incomplete ? "..." : "";
  char digits[17];
  for (const auto& f : sampled.frames) {
    if (f.function.empty() || f.function == "??") {
      key += f.module;
      key += '+';
      key.append(digits, std::to_chars(digits, digits + sizeof(digits), f.offset, 16).ptr);
    } else {
      key += f.function;
      key += '@';
      key += f.file.value_or("");
      key += ':';
      key.append(digits, std::to_chars(digits, digits + sizeof(digits), f.line.value_or(0)).ptr);
    }
    key += ';';
  }
  return key;
}

// Where a thread sleeps now, from the kernel's own record (/proc/PID/task/TID/stack, root):
// the recorder takes a wait's kernel stack when the thread runs again, so a thread still
// waiting at the end of the window has none of its own.
std::vector<std::string> sleeping_kernel_stack(int pid, int tid) {
  std::vector<std::string> out;
  auto text = read_text_file(fmt::format("/proc/{}/task/{}/stack", pid, tid));
  if (!text) return out;
  for (const Frame& f : parse_kernel_stack(*text))
    out.push_back(fmt::format("{}+{:#x}", f.function, f.offset));
  return out;
}

}  // namespace

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

bool in_wait_loop(const std::vector<Frame>& frames) {
  // The innermost frames only: a loop that waits is at the top of the stack.
  static const Pattern waits(
      "(sched_yield|(^|_)(poll|ppoll|epoll_wait|epoll_pwait2?|select|pselect6?)$|nanosleep|futex|"
      "pthread_cond_"
      "(timed)?wait|sem_(timed)?wait|pthread_spin_lock|_progress|progress_|[Pp]oll[A-Z_]|"
      "waitUntil|ncclProxy|shm_poll|usleep|^sleep)");
  std::size_t n = std::min<std::size_t>(frames.size(), 4);
  for (std::size_t i = 0; i < n; ++i) {
    if (waits.search(frames[i].function)) return true;
  }
  return false;
}

Watcher::Watcher(const WatchOptions& options, std::unique_ptr<Recorder> recorder)
    : options_(options),
      recorder_(std::move(recorder)),
      start_ns_(monotonic_ns()),
      cpu_time_(start_ns_) {}

Result<std::unique_ptr<Watcher>> Watcher::start(const WatchOptions& options,
                                                std::unique_ptr<Recorder> recorder,
                                                std::vector<Diagnostic>& diagnostics) {
  DiscoveryOptions dopt;
  dopt.pids = options.pids;
  dopt.subprocesses = options.subprocesses;
  dopt.match = options.match;
  auto procs = discover(dopt, &diagnostics);
  if (!procs) return procs.error();
  if (!recorder) {
    auto r = Recorder::start(options.recorder);
    if (!r) return r.error();
    recorder = std::move(*r);
  }
  std::unique_ptr<Watcher> w(new Watcher(options, std::move(recorder)));
  for (const auto& dp : *procs) w->add_process(dp);
  w->last_discovery_ns_ = monotonic_ns();
  return w;
}

void Watcher::add_process(const DiscoveredProcess& dp) {
  if (procs_.count(dp.pid) != 0) {
    procs_[dp.pid].discovered = dp;
    return;
  }
  if (auto st = recorder_->watch(dp.pid); !st) {
    diagnostics_.push_back(
        make_diagnostic(Diagnostic::Severity::warning, st.error().what(), st.error().hint, dp.pid));
    return;
  }
  Proc& p = procs_[dp.pid];
  p.discovered = dp;
  setup_python(dp.pid, p);
  p.recording_ns = monotonic_ns();
  p.io_chars = read_io_chars(dp.pid);
  std::ifstream comm(fmt::format("/proc/{}/comm", dp.pid));
  std::getline(comm, p.comm);
  last_progress_[dp.pid] = monotonic_ns();
}

// A Python process: its samples copy their Python frames too (named when finished). A program
// that has just begun (python_looks > 0) is looked at again at the next rediscoveries whatever
// the failure (its libraries may not be mapped, or not relocated, yet); the last failure is
// noted.
void Watcher::setup_python(int pid, Proc& p) {
  std::string why;
  if (const python::Located* where = stacks_.python(pid, why)) {
    p.python_looks = 0;
    if (auto st = recorder_->watch_python(pid, *where); !st)
      p.notes.push_back({.kind = WatchNoteKind::python_not_watched, .detail = st.error().what()});
    return;
  }
  if (p.python_looks > 0) {
    stacks_.forget(pid);  // so that the next look reads its maps again
    if (--p.python_looks > 0) return;
  }
  if (!why.empty()) p.notes.push_back({.kind = WatchNoteKind::no_python_frames, .detail = why});
}

void Watcher::renew_after_exec(int pid, std::int64_t exec_ns, const std::string& comm,
                               Recording& batch) {
  auto it = procs_.find(pid);
  if (it == procs_.end()) return;
  Proc& p = it->second;
  // Samples of the old program cannot be finished: its maps and memory are gone (a stack
  // unwound against the new program's maps would be wrong); waits keep all but their stacks.
  std::size_t before = batch.samples.size();
  std::erase_if(batch.samples,
                [&](const SampleRecord& s) { return s.pid == pid && s.ts_ns < exec_ns; });
  if (std::size_t dropped = before - batch.samples.size(); dropped > 0)
    p.notes.push_back({.kind = WatchNoteKind::samples_before_exec,
                       .count = dropped,
                       .t_s = since_start(exec_ns)});
  for (auto& w : batch.waits) {
    if (w.pid == pid && w.end_ns < exec_ns && w.has_user_stack) {
      w.has_user_stack = false;
      w.copy.stack = StackCopy{};
    }
  }
  p.comm = comm;
  stacks_.forget(pid);
  p.python_looks = kPythonLooks;
  setup_python(pid, p);
}

void Watcher::rediscover() {
  if (!options_.subprocesses && options_.match.empty()) return;
  DiscoveryOptions dopt;
  for (const auto& [pid, p] : procs_) {
    if (!p.gone &&
        std::find(options_.pids.begin(), options_.pids.end(), pid) != options_.pids.end())
      dopt.pids.push_back(pid);
  }
  dopt.subprocesses = options_.subprocesses;
  dopt.match = options_.match;
  if (dopt.pids.empty() && dopt.match.empty()) return;
  auto procs = discover(dopt, nullptr);
  if (!procs) return;
  for (const auto& dp : *procs) {
    if (procs_.count(dp.pid) == 0) add_process(dp);
  }
}

std::vector<int> Watcher::pids() const {
  std::vector<int> out;
  for (const auto& [pid, p] : procs_) {
    if (!p.gone) out.push_back(pid);
  }
  return out;
}

std::vector<int> Watcher::rank_pids() const {
  std::vector<int> ranks;
  for (const auto& [pid, p] : procs_) {
    if (!p.gone && p.discovered.role == kRoleRank) ranks.push_back(pid);
  }
  return ranks.empty() ? pids() : ranks;
}

bool Watcher::all_gone() const {
  return std::all_of(procs_.begin(), procs_.end(), [](const auto& kv) { return kv.second.gone; });
}

Status Watcher::step(std::chrono::milliseconds timeout) {
  auto st = recorder_->poll(pending_, timeout);
  std::int64_t now = monotonic_ns();
  // The kernel's counters (processes it added on fork with --subprocesses, data moved) and,
  // for the watchdog only, /proc/PID/io: every 250 ms, not at every poll (each read is system
  // calls, ~1 us each on a VM, and progress is judged in seconds).
  if (now - last_io_ns_ >= kIoCheckNs) {
    read_counters(now);
    if (options_.recorder.data_progress) check_io(now);
    last_io_ns_ = now;
  }
  // Each batch names the new addresses of each module in one pass over its symbol table
  // (libtorch's: several ms a process; the libdw session itself is kept): every 5 s, not
  // every poll (a process's copies must be finished while it lives: a longer batch loses more
  // of those of a process that ends). An exit is folded at once: the window may end with it.
  // The watchdog flushes before it judges a stall.
  // An exec too: the new program's interpreter is looked for when it is folded.
  bool exited =
      std::any_of(pending_.events.begin(), pending_.events.end(), [](const EventRecord& e) {
        return e.kind == EventRecord::Kind::exit || e.kind == EventRecord::Kind::exec;
      });
  if (exited || now - last_fold_ns_ >= kFoldNs ||
      pending_.samples.size() + pending_.waits.size() >= kFoldRecords) {
    fold(pending_);
    pending_ = Recording{};
    last_fold_ns_ = now;
  }
  if (now - last_discovery_ns_ >= kRediscoverNs) {
    rediscover();
    for (auto& [pid, p] : procs_) {
      if (!p.gone && p.python_looks > 0) setup_python(pid, p);
    }
    last_discovery_ns_ = now;
  }
  return st;
}

// Processes the kernel side added on fork (--subprocesses), data moved (progress), waits.
void Watcher::read_counters(std::int64_t now) {
  for (const auto& [pid, counters] : recorder_->watched()) {
    if (procs_.count(pid) == 0) {
      DiscoveredProcess dp;
      dp.pid = pid;
      dp.role = kRoleProcess;
      Proc& fresh = procs_[pid];
      fresh.discovered = dp;
      fresh.python_looks = kPythonLooks;
      setup_python(pid, fresh);
      last_progress_[pid] = now;
    }
    Proc& p = procs_[pid];
    if (counters.io_jiffies > p.io_jiffies) last_progress_[pid] = now;
    p.io_jiffies = counters.io_jiffies;
    p.wait_count = counters.waits;
  }
}

// Data calls through the VFS (files, pipes, and sockets by read/write) that moved bytes: the
// process's rchar + wchar grew. Socket calls of any kind are counted in the kernel (io_jiffies).
// And its CPU time, judged against its wait-loop samples at the next fold (CpuProgress).
void Watcher::check_io(std::int64_t now) {
  for (auto& [pid, p] : procs_) {
    if (p.gone) continue;
    if (auto st = read_stat(pid)) cpu_.look(pid, st->utime + st->stime, now);
    auto chars = read_io_chars(pid);
    if (!chars) continue;
    if (p.io_chars && *chars > *p.io_chars) last_progress_[pid] = now;
    p.io_chars = chars;
  }
}

void Watcher::fold(Recording& batch) {
  for (const auto& e : batch.events) {
    if (e.kind == EventRecord::Kind::exec) renew_after_exec(e.pid, e.ts_ns, e.comm, batch);
  }
  std::map<int, std::vector<SampleRecord*>> samples;
  std::map<int, std::vector<WaitRecord*>> waits;
  for (auto& s : batch.samples) samples[s.pid].push_back(&s);
  for (auto& w : batch.waits) waits[w.pid].push_back(&w);
  std::set<int> pids;
  for (const auto& [pid, v] : samples) pids.insert(pid);
  for (const auto& [pid, v] : waits) pids.insert(pid);
  for (int pid : pids) {
    auto pit = procs_.find(pid);
    if (pit == procs_.end()) continue;
    Proc& p = pit->second;
    // One finish per process and batch: its samples and the waits' stacks together.
    std::vector<SampledStack*> copies;
    for (auto* s : samples[pid]) copies.push_back(&s->copy);
    std::vector<WaitRecord*>& pw = waits[pid];
    for (auto* w : pw) {
      if (w->has_user_stack) copies.push_back(&w->copy);
    }
    auto frames = stacks_.finish(pid, copies, p.notes);
    std::size_t i = 0;
    for (auto* s : samples[pid]) {
      SampledFrames& f = frames[i++];
      if (p.comm.empty()) p.comm = s->comm;
      ++p.samples;
      ++p.thread_samples[s->tid];
      cpu_time_.add(pid, s->tid, s->ts_ns);
      // Stacks with the same key have the same functions: judged once, when first seen.
      StackCount& c = p.stacks[stack_key(f)];
      if (c.samples++ == 0) {
        c.waits = in_wait_loop(f.frames);
        c.frames = std::move(f.frames);
        c.incomplete = f.incomplete;
      }
      if (!c.frames.empty() && !c.waits && !s->in_kernel)
        last_progress_[pid] = std::max(last_progress_[pid], s->ts_ns);
      if (c.waits) cpu_.wait_sample(pid, s->ts_ns);
    }
    std::vector<SampledFrames> wait_frames(
        std::make_move_iterator(frames.begin() + static_cast<long>(i)),
        std::make_move_iterator(frames.end()));
    fold_waits(pid, pw, std::move(wait_frames));
  }
  const std::int64_t now = monotonic_ns();
  for (const auto& [pid, p] : procs_) {
    if (auto cpu = cpu_.judge(pid, now)) last_progress_[pid] = std::max(last_progress_[pid], *cpu);
  }
  for (auto& e : batch.events) {
    TimelineEntry t;
    t.t_s = since_start(e.ts_ns);
    auto pit = procs_.find(e.pid);
    if (pit != procs_.end()) t.rank = pit->second.discovered.rank;
    if (e.kind == EventRecord::Kind::oom && pit != procs_.end()) pit->second.oom_victim = true;
    if (e.kind == EventRecord::Kind::exit && pit != procs_.end()) {
      pit->second.exit = process_exit_of(e.exit_code);
      pit->second.exit->oom_victim = pit->second.oom_victim;
      pit->second.gone = true;
      recorder_->unwatch(e.pid);
      stacks_.forget(e.pid);
      cpu_.forget(e.pid);
    }
    t.event = std::move(e);
    timeline_.push_back(std::move(t));
  }
}

WaitView Watcher::wait_view(const WaitRecord& w, SampledFrames frames) const {
  WaitView v;
  v.tid = w.tid;
  v.comm = w.comm;
  v.syscall_nr = w.syscall_nr;
  if (w.syscall_nr >= 0) v.syscall = syscall_name(w.syscall_nr);
  if (w.syscall_nr >= 0 && takes_fd(w.syscall_nr))
    v.fd = static_cast<long long>(static_cast<std::int32_t>(w.arg0));
  v.duration_s = v.offcpu_s = static_cast<double>(w.duration_ns) / 1e9;
  v.end_s = since_start(w.end_ns);
  v.ongoing = w.ongoing;
  v.waker_pid = w.waker_pid;
  v.waker_tid = w.waker_tid;
  v.waker_comm = w.waker_comm;
  v.waker_known = recorder_->records_wakers();
  for (auto a : w.copy.kernel) {
    std::string name = kernel_.name(a);
    // The recorder's own frames (the tracepoint that took the stack) are not the wait.
    bool ours = name.rfind("bpf_", 0) == 0 || name.rfind("__bpf_trace", 0) == 0 ||
                name.rfind("__traceiter", 0) == 0;
    if (!ours || !v.kernel.empty()) v.kernel.push_back(std::move(name));
  }
  v.frames = std::move(frames.frames);
  v.incomplete = frames.incomplete;
  return v;
}

void Watcher::fold_waits(int pid, std::vector<WaitRecord*>& waits,
                         std::vector<SampledFrames> frames) {
  Proc& p = procs_[pid];
  std::size_t i = 0;
  for (auto* w : waits) {
    SampledFrames f;
    if (w->has_user_stack && i < frames.size()) f = std::move(frames[i++]);
    if (p.comm.empty()) p.comm = w->comm;
    p.waits.push_back(wait_view(*w, std::move(f)));
  }
  keep_longest(p.waits);
}

void Watcher::keep_longest(std::vector<WaitView>& waits) const {
  std::stable_sort(waits.begin(), waits.end(), [](const WaitView& a, const WaitView& b) {
    return a.duration_s > b.duration_s;
  });
  if (options_.recorder.top_waits > 0 && waits.size() > options_.recorder.top_waits)
    waits.resize(options_.recorder.top_waits);
}

// Threads that were blocked before their process's recording began produce no events (the
// recorder sees a sleep from its start); the kernel's own record says what they wait in and
// since when.
void Watcher::add_blocked_before(int pid, Proc& p, std::int64_t now,
                                 const std::map<int, WaitRecord*>& copies) {
  auto t = open_live_target(pid, true);
  if (!t) return;
  for (int tid : (*t)->thread_ids()) {
    bool seen = std::any_of(p.waits.begin(), p.waits.end(),
                            [&](const WaitView& w) { return w.tid == tid && w.ongoing; });
    if (seen) continue;
    ThreadSnapshot d;
    d.tid = tid;
    (*t)->describe_thread(d);
    if ((d.state != 'S' && d.state != 'D') || !d.syscall || *d.syscall == "running" || !d.blocked_s)
      continue;
    if (*d.blocked_s * 1e9 < static_cast<double>(options_.recorder.wait_threshold_ns)) continue;
    // Began after its threads had their state: the recorder saw it (watch() gives every thread
    // its state before it returns; a sleep between the window's start and then is here too),
    // unless the recorder itself says it did not see this sleep begin (its copy of a sleep
    // older than the thread's state: the state could not be made when the process was watched,
    // as when another BPF program held the CPU's task-storage lock, and came later).
    auto copy = copies.find(tid);
    bool recording = *d.blocked_s * 1e9 < static_cast<double>(now - p.recording_ns);
    if (recording && copy == copies.end()) continue;
    WaitView v;
    v.tid = tid;
    v.comm = d.name;
    v.syscall = *d.syscall;
    v.duration_s = v.offcpu_s = *d.blocked_s;
    v.end_s = since_start(now);
    v.ongoing = true;
    v.before_window = !recording;
    for (const auto& f : d.kernel_frames) v.kernel.push_back(f.function);
    // Its user stack, when the recorder copied this sleep (it has not run since the copy).
    if (copy != copies.end() && copy->second->has_user_stack) {
      SampledFrames f = std::move(stacks_.finish(pid, {&copy->second->copy}, p.notes)[0]);
      v.frames = std::move(f.frames);
      v.incomplete = f.incomplete;
    }
    p.waits.push_back(std::move(v));
  }
}

// A thread asleep does not change its Python frame chain: the chains of the threads still
// asleep at the end are read from the live processes (one walk each, nothing stopped) and kept
// for a thread only if it did not run meanwhile (the same sleep, seq, in a second look at the
// recorder's states after the walks).
void Watcher::python_of_sleepers(std::vector<WaitRecord>& ongoing, std::int64_t now) {
  std::map<int, std::vector<std::pair<int, SampledStack*>>> sleeping;
  for (auto& w : ongoing) {
    if (w.has_user_stack && procs_.count(w.pid) != 0) sleeping[w.pid].emplace_back(w.tid, &w.copy);
  }
  if (sleeping.empty()) return;
  for (const auto& [pid, threads] : sleeping) stacks_.walk_sleeping_python(pid, threads);
  std::set<std::pair<int, std::uint64_t>> still;
  for (const auto& w : recorder_->ongoing(now, options_.recorder.wait_threshold_ns)) {
    if (w.has_user_stack) still.emplace(w.tid, w.seq);
  }
  for (auto& w : ongoing) {
    if (w.copy.python && still.count({w.tid, w.seq}) == 0) w.copy.python.reset();
  }
}

void Watcher::flush() {
  fold(pending_);
  pending_ = Recording{};
  last_fold_ns_ = monotonic_ns();
}

WatchReport Watcher::report() {
  recorder_->drain_now(pending_);
  flush();
  std::int64_t now = monotonic_ns();
  WatchReport r;
  r.recorder = "ebpf";
  r.window_s = since_start(now);
  r.start_ns = start_ns_;
  r.cpu_bucket_s = static_cast<double>(cpu_time_.bucket_ns(now, options_.recorder.sample_hz)) / 1e9;
  r.sample_hz = options_.recorder.sample_hz;
  r.wait_threshold_ns = options_.recorder.wait_threshold_ns;
  r.wakers_known = recorder_->records_wakers();
  r.wait_copies = recorder_->wait_copies();
  r.counters = recorder_->counters();
  r.diagnostics = diagnostics_;
  for (const auto& [pid, c] : recorder_->watched()) {
    if (auto it = procs_.find(pid); it != procs_.end()) it->second.wait_count = c.waits;
  }
  std::vector<WaitRecord> ongoing = recorder_->ongoing(now, options_.recorder.wait_threshold_ns);
  python_of_sleepers(ongoing, now);
  std::map<int, std::map<int, WaitRecord*>> before;  // pid -> tid -> its sleep's copy
  for (auto& w : ongoing) {
    auto it = procs_.find(w.pid);
    if (it == procs_.end()) continue;
    if (w.before_window) {
      before[w.pid][w.tid] = &w;
      continue;
    }
    // Its user stack, when the recorder copied it while it slept (the same finish stage).
    SampledFrames frames;
    if (w.has_user_stack) frames = std::move(stacks_.finish(w.pid, {&w.copy}, it->second.notes)[0]);
    WaitView v = wait_view(w, std::move(frames));
    if (v.kernel.empty()) v.kernel = sleeping_kernel_stack(w.pid, w.tid);
    it->second.waits.push_back(std::move(v));
  }
  for (auto& [pid, p] : procs_) {
    if (!p.gone) add_blocked_before(pid, p, now, before[pid]);
    // Workers, and ranks of unknown number (a spawn pool's workers look like those until
    // their frames show the pool's loop: watch_groups.cpp)
    bool worker =
        p.discovered.role == "worker" || (p.discovered.role == kRoleRank && !p.discovered.rank);
    if (!p.gone && recorder_->wait_copies().empty() && worker)
      python_of_waiting_worker(pid, p.waits);
    keep_longest(p.waits);
    ProcessWatch pw;
    pw.pid = pid;
    pw.ppid = p.discovered.ppid;
    pw.rank = p.discovered.rank;
    pw.role = p.discovered.role;
    pw.comm = p.comm;
    pw.samples = p.samples;
    pw.cpu_share = cpu_share(p.thread_samples, r.sample_hz * r.window_s);
    pw.cpu_over_time = cpu_time_.shares(pid, now, r.sample_hz);
    std::vector<const StackCount*> counts;
    for (const auto& [key, c] : p.stacks) counts.push_back(&c);
    std::stable_sort(counts.begin(), counts.end(), [](const StackCount* a, const StackCount* b) {
      return a->samples > b->samples;
    });
    for (std::size_t i = 0; i < counts.size() && i < options_.top_stacks; ++i) {
      pw.top.push_back(
          StackShare{counts[i]->frames, counts[i]->incomplete, counts[i]->samples,
                     static_cast<double>(counts[i]->samples) / static_cast<double>(p.samples)});
    }
    pw.waits = p.waits;
    pw.wait_count = p.wait_count;
    pw.exit = p.exit;
    pw.notes = p.notes;
    r.processes.push_back(std::move(pw));
  }
  std::stable_sort(r.processes.begin(), r.processes.end(),
                   [](const ProcessWatch& a, const ProcessWatch& b) {
                     if (a.rank.has_value() != b.rank.has_value()) return a.rank.has_value();
                     if (a.rank && b.rank && *a.rank != *b.rank) return *a.rank < *b.rank;
                     return a.pid < b.pid;
                   });
  r.timeline = timeline_;
  group_watched(r);
  return r;
}

}  // namespace hangscan
