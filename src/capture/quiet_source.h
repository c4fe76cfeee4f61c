// QuietSource: a way to copy a live process's sleeping threads without stopping them.
//
// Why: a ptrace stop wakes every blocked thread (its system call restarts, its context-switch
// counts move, the scheduler record behind blocked_s starts again), so a dump disturbed what it
// measured. A quiet source copies a sleeping thread's registers and stack top while it sleeps
// and proves afterwards, by its sleep sequence, that it did not run in between; acquire.cpp
// then stops only the threads that run. Each source is one file pair plus one line in
// quiet_sources() (quiet_source.cpp); the BPF snapshot (bpf_snapshot.h) is the first.
//
// A source is loaded once per run (QuietLoader: for BPF the kernel's BTF and the verifier, tens
// of milliseconds) and opened on each process (QuietSource: cheap). QuietSession starts the
// load on a helper thread at the start of a run, while the processes are found.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hangscan/result.h"
#include "target/target.h"

namespace hangscan {

// One thread a quiet source copied while it slept.
struct QuietThread {
  int tid = 0;
  Registers regs;
  StackCopy stack;        // the top of its stack, from regs.sp(); the rest is read by the caller
  std::uint64_t seq = 0;  // its sleep sequence: moves whenever the thread leaves a CPU
};

// One pass over a process: who sleeps (copied) and who does not (to be stopped).
struct QuietTake {
  std::vector<QuietThread> asleep;
  std::vector<int> awake;
};

// A source opened on one process.
class QuietSource {
 public:
  virtual ~QuietSource() = default;
  // The `capture` value of the threads it takes ("bpf").
  virtual std::string name() const = 0;
  // Copies every sleeping thread of the process; lists the others. Their Python frames are
  // the caller's to read, before asleep_now() proves the sleep.
  virtual Result<QuietTake> take() = 0;
  // The sleep sequence of every thread asleep now (threads not asleep are absent): a thread
  // whose sequence differs from its take() ran in between.
  virtual Result<std::map<int, std::uint64_t>> asleep_now() = 0;
};

// A source loaded once for a run. Why apart from QuietSource: loading costs tens of
// milliseconds, opening on a process a fraction of one; a run of several processes loads once.
// open() may be called from several threads; the sources it returns may outlive it.
class QuietLoader {
 public:
  virtual ~QuietLoader() = default;
  virtual std::string name() const = 0;
  // The source on `pid` (an error says why not, e.g. an iterator that cannot attach).
  virtual Result<std::unique_ptr<QuietSource>> open(int pid) = 0;
};

// A registered source: its name and how it loads (an error says why not here).
struct QuietSourceEntry {
  const char* name;
  Result<std::shared_ptr<QuietLoader>> (*load)();
};

// Every registered source, in order of preference.
std::span<const QuietSourceEntry> quiet_sources();

// The first source that loads here; else an error naming why each did not.
Result<std::shared_ptr<QuietLoader>> load_quiet_source();

// load_quiet_source() then open(pid): `doctor`'s check.
Result<std::unique_ptr<QuietSource>> open_quiet_source(int pid);

// The quiet source of one run: loaded once, on a helper thread started at the start of the run
// (while processes are found and described), shared by every process the run captures. Why a
// session: a dump of several processes paid the load per process. Nothing is pinned: what it
// loads lives in file descriptors and dies with hangscan.
class QuietSession {
 public:
  // Starts loading now, on a helper thread.
  static std::shared_ptr<QuietSession> start();
  // Waits for the load (the first call), then opens the source on `pid`. The first call adds a
  // --verbose line to `log` (when not null) saying what was loaded and how long the wait was.
  Result<std::unique_ptr<QuietSource>> open(int pid, std::vector<std::string>* log);

 private:
  QuietSession() = default;
  std::mutex mu_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point loaded_at_;
  std::future<Result<std::shared_ptr<QuietLoader>>> loading_;
  std::optional<Result<std::shared_ptr<QuietLoader>>> loaded_;
};

}  // namespace hangscan
