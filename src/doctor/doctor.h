// run_doctor(): what in this machine's set-up would stop ptrace or cores from working.
//
// Why: a hang is the worst moment to learn that ptrace is refused (Yama, a container without
// CAP_SYS_PTRACE, another tracer) or that the kernel writes no core (ulimit -c 0, a pipe to a
// handler that drops big cores, a full disk). Each check says what it found and, when it
// would fail, the fix. Only files under /proc, /sys, /etc and the file system are read; the
// target is never stopped.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hangscan {

struct DoctorCheck {
  enum class Level { ok, warn, fail };
  Level level = Level::ok;
  std::string name;  // "ptrace", "core limit", ...
  std::string finding;
  std::string fix;  // empty when nothing to do
};

struct DoctorOptions {
  std::optional<int> pid;
  std::string core_dir = ".";  // where `hangscan gcore` would write
};

std::vector<DoctorCheck> run_doctor(const DoctorOptions& opts);

// "ok  ", "WARN", "FAIL"
const char* doctor_level_name(DoctorCheck::Level level);

}  // namespace hangscan
