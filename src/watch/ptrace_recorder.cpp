#include "watch/ptrace_recorder.h"

#include <algorithm>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "proc/deaths.h"
#include "proc/proc_files.h"
#include "python/merge.h"
#include "target/live_target.h"
#include "util/deadline.h"
#include "watch/watcher.h"

namespace hangscan {

namespace {

constexpr std::size_t kStackBytes = 16 * 1024;

class PtraceRecorder : public Recorder {
 public:
  explicit PtraceRecorder(const RecorderOptions& o)
      : period_ns_(1'000'000'000 / std::max(1, o.sample_hz)), next_ns_(monotonic_ns()) {}

  Status watch(int pid) override {
    procs_.emplace(pid, ProcessCounters{});
    return Ok{};
  }
  void unwatch(int pid) override {
    procs_.erase(pid);
    readers_.erase(pid);
    images_.erase(pid);
  }
  // The frames are walked while the process is stopped for its sample, as `dump` walks them.
  Status watch_python(int pid, const python::Located& where) override {
    readers_.insert_or_assign(pid, std::make_unique<python::PythonReader>(where));
    images_[pid] = image_of(pid);
    return Ok{};
  }
  std::map<int, ProcessCounters> watched() override { return procs_; }
  RecorderCounters counters() override { return counters_; }
  bool records_oom() const override { return false; }
  bool records_wakers() const override { return false; }
  std::vector<WaitRecord> ongoing(std::int64_t, std::uint64_t) override { return {}; }

  Status poll(Recording& out, std::chrono::milliseconds timeout) override {
    std::int64_t now = monotonic_ns();
    std::int64_t wait = std::min<std::int64_t>(next_ns_ - now, timeout.count() * 1'000'000);
    if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
    if (monotonic_ns() < next_ns_) return Ok{};
    // One sample per period; a late tick (a slow start, a long stop) is not made up in a burst.
    next_ns_ = std::max(next_ns_ + period_ns_, monotonic_ns() + period_ns_ / 2);
    std::vector<int> gone;
    for (auto& [pid, counters] : procs_) {
      if (!sample(pid, out, counters)) gone.push_back(pid);
    }
    for (int pid : gone) {
      procs_.erase(pid);
      EventRecord& e = out.events.emplace_back();
      e.kind = EventRecord::Kind::exit;
      e.ts_ns = monotonic_ns();
      e.pid = e.tid = pid;
      e.exit_code = zombie_status(pid).value_or(-1);
    }
    return Ok{};
  }

 private:
  // Which program image a process runs: its auxiliary vector (the kernel writes it at each exec:
  // the program's entry, headers and random bytes' addresses, which differ from one exec to the
  // next). Why: without eBPF no event says that a process exec'd, and its interpreter's
  // description is the old program's.
  static std::string image_of(int pid) {
    auto auxv = read_text_file(fmt::format("/proc/{}/auxv", pid));
    return auxv ? *auxv : std::string();
  }

  // A Python process whose program changed since its interpreter was described: the
  // description goes (no walk of the new program with the old one's addresses), and an exec
  // record tells the watcher, which looks for the new interpreter.
  void check_exec(int pid, Recording& out) {
    auto it = images_.find(pid);
    if (it == images_.end()) return;
    std::string now = image_of(pid);
    if (now.empty() || now == it->second) return;
    images_.erase(it);
    readers_.erase(pid);
    EventRecord& e = out.events.emplace_back();
    e.kind = EventRecord::Kind::exec;
    e.ts_ns = monotonic_ns();
    e.pid = e.tid = pid;
    if (auto comm = read_text_file(fmt::format("/proc/{}/comm", pid)))
      e.comm = comm->substr(0, comm->find('\n'));
    e.path = read_link(fmt::format("/proc/{}/exe", pid)).value_or("");
  }

  // The wait status of a process that is a zombie now (as `dump` reads it: /proc/PID/stat
  // field 52); nullopt once it is reaped, or when /proc does not say.
  static std::optional<int> zombie_status(int pid) {
    auto stat = read_text_file(fmt::format("/proc/{}/stat", pid));
    if (!stat) return std::nullopt;
    auto parsed = parse_stat(*stat);
    if (!parsed || parsed->state != 'Z') return std::nullopt;
    return parse_stat_exit_code(*stat);
  }

  // One sample of the threads of `pid` that are running; false when the process is gone.
  bool sample(int pid, Recording& out, ProcessCounters& counters) {
    check_exec(pid, out);
    auto t = open_live_target(pid);
    if (!t) return t.error().code != Errc::no_such_process && t.error().code != Errc::zombie;
    Target& target = **t;
    std::vector<ThreadSnapshot> running;
    for (int tid : target.thread_ids()) {
      ThreadSnapshot d;
      d.tid = tid;
      target.describe_thread(d);
      if (d.state == 'R') running.push_back(std::move(d));
    }
    if (running.empty()) return true;
    // The cost the fallback states, counted: the pause as `dump` reports it (first stop to
    // last resume).
    counters_.stopped_ns += 1000 * static_cast<std::uint64_t>(std::max<std::int64_t>(
                                       0, copy_running(pid, target, running, out, counters)));
    return true;
  }

  // Freezes the process, copies the registers and stack top of the threads that were running,
  // resumes it and returns the pause in microseconds (0 when it could not be stopped).
  std::int64_t copy_running(int pid, Target& target, const std::vector<ThreadSnapshot>& running,
                            Recording& out, ProcessCounters& counters) {
    auto freeze = target.freeze(Deadline::after(std::chrono::milliseconds(500)));
    if (!freeze) return 0;
    if ((*freeze)->executed()) return (*freeze)->release();  // the old program's threads: no sample
    std::int64_t ts = monotonic_ns();
    python::RawPythonState py;
    if (auto r = readers_.find(pid); r != readers_.end())
      py = r->second->walk(target.memory(), false);
    for (const auto& ft : (*freeze)->threads()) {
      auto d = std::find_if(running.begin(), running.end(),
                            [&](const ThreadSnapshot& r) { return r.tid == ft.tid; });
      if (d == running.end() || !ft.regs) continue;
      SampleRecord& s = out.samples.emplace_back();
      s.pid = pid;
      s.tid = ft.tid;
      s.ts_ns = ts;
      s.comm = d->name;
      s.copy.regs = *ft.regs;
      s.copy.stack.start = ft.regs->sp();
      s.copy.stack.sealed = true;  // unwound after the release: the stack has moved on
      s.copy.stack.bytes.resize(kStackBytes);
      std::size_t got = target.memory().read(ft.regs->sp(), s.copy.stack.bytes.data(), kStackBytes);
      s.copy.stack.bytes.resize(got);
      s.copy.python = python::python_thread_of(py, ft.tid, ft.regs->fs_base());
      ++counters.samples;
      ++counters_.events;
    }
    return (*freeze)->release();
  }

  std::int64_t period_ns_;
  std::int64_t next_ns_;
  std::map<int, ProcessCounters> procs_;
  std::map<int, std::unique_ptr<python::PythonReader>> readers_;
  std::map<int, std::string> images_;  // each Python process's image_of() when described
  RecorderCounters counters_;
};

}  // namespace

std::unique_ptr<Recorder> make_ptrace_recorder(const RecorderOptions& options) {
  return std::make_unique<PtraceRecorder>(options);
}

}  // namespace hangscan
