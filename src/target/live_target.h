// LiveTarget: a running process on this machine as a Target.
//
// Why: the live half of "live and core are one pipeline". Opening checks everything that
// would make a capture fail (no such process, zombie, kernel thread, already traced,
// permission) up front, so the user gets one clear line and a hint instead of a ptrace errno.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hangscan/result.h"
#include "proc/sched_clock.h"
#include "proc/target_file.h"
#include "target/process_memory.h"
#include "target/seize_reaper.h"
#include "target/target.h"

namespace hangscan {

// The helpers the live targets of one run share, each with a thread of its own: the reader of
// source files, the seize reaper, the run-queue clock's per-CPU measurement. Why: made per
// process, a dump of 8 ranks started about 30 helper threads for work that one each does (all
// serve one process at a time); their starts and wake-ups were most of what dump cost more
// than before them. Captures of one run use it one at a time (the reaper serves one freeze).
class LiveRunShared {
 public:
  TargetFileReader& files() { return files_; }
  RunQueueClock& clock() { return clock_; }
  // Made at the first freeze (a read-only run starts none).
  std::shared_ptr<SeizeReaper> reaper();

 private:
  std::mutex mu_;
  TargetFileReader files_;
  RunQueueClock clock_;
  std::shared_ptr<SeizeReaper> reaper_;
};

// `read_only`: the caller will only read memory (--nonblocking), never ptrace, so a process
// another tool (strace, gdb) is tracing is accepted. `shared`: the run's helpers (null: the
// target gets its own).
Result<std::unique_ptr<Target>> open_live_target(int pid, bool read_only = false,
                                                 std::shared_ptr<LiveRunShared> shared = nullptr);

class LiveTarget : public Target {
 public:
  LiveTarget(int pid, std::shared_ptr<LiveRunShared> shared);

  int pid() const override { return pid_; }
  bool is_live() const override { return true; }
  std::string describe() const override;
  MemoryReader& memory() override { return memory_; }
  const std::vector<Mapping>& mappings() const override { return mappings_; }
  std::optional<std::string> local_path(const Mapping& m) const override;
  std::vector<int> thread_ids() override;
  Result<std::unique_ptr<Freeze>> freeze(const Deadline& deadline) override;
  Result<std::unique_ptr<Freeze>> freeze_except(const Deadline& deadline,
                                                const std::vector<int>& leave_alone) override;
  void describe_process(ProcessSnapshot& out) override;
  void describe_thread(ThreadSnapshot& out) override;
  std::vector<std::string> environment() override;
  Result<TargetFile> read_target_file(const std::string& name, std::size_t max_bytes) override;
  std::optional<std::int64_t> started_unix_ns() const override;

  // Re-reads /proc/PID/maps (e.g. after a freeze found a thread whose stack is not mapped).
  Status refresh_mappings();

 private:
  int pid_;
  ProcessMemory memory_;
  std::vector<Mapping> mappings_;
  std::shared_ptr<LiveRunShared> shared_;  // never null
};

}  // namespace hangscan
