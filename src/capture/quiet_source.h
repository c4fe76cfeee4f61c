// QuietSource: a way to copy a live process's sleeping threads without stopping them.
//
// Why: a ptrace stop wakes every blocked thread (its system call restarts, its context-switch
// counts move, the scheduler record behind blocked_s starts again), so a dump disturbed what it
// measured. A quiet source copies a sleeping thread's registers and stack top while it sleeps
// and proves afterwards, by its sleep sequence, that it did not run in between; acquire.cpp
// then stops only the threads that run. Each source is one file pair plus one line in
// quiet_sources() (quiet_source.cpp); the BPF snapshot (bpf_snapshot.h) is the first.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
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

class QuietSource {
 public:
  virtual ~QuietSource() = default;
  // The `capture` value of the threads it takes ("bpf").
  virtual std::string name() const = 0;
  // Copies every sleeping thread of the process; lists the others.
  virtual Result<QuietTake> take() = 0;
  // The sleep sequence of every thread asleep now (threads not asleep are absent): a thread
  // whose sequence differs from its take() ran in between.
  virtual Result<std::map<int, std::uint64_t>> asleep_now() = 0;
};

// A registered source: its name and how it opens for one process (an error says why not here).
struct QuietSourceEntry {
  const char* name;
  Result<std::unique_ptr<QuietSource>> (*open)(int pid);
};

// Every registered source, in order of preference.
std::span<const QuietSourceEntry> quiet_sources();

// The first source that opens for `pid`; else an error naming why each did not.
Result<std::unique_ptr<QuietSource>> open_quiet_source(int pid);

}  // namespace hangscan
