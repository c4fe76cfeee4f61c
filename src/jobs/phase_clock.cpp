#include "jobs/phase_clock.h"

#include <time.h>

#include <fmt/core.h>

namespace hangscan {

namespace {

// CPU seconds of this process (all threads).
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

void PhaseClock::start() { last_ = cpu_seconds(); }

void PhaseClock::lap(Phase p) {
  double now = cpu_seconds();
  spent_[p] += now - last_;
  last_ = now;
}

std::string PhaseClock::summary() const {
  static constexpr std::array<const char*, kCount> kNames = {"open", "capture", "environ", "crash",
                                                             "report"};
  std::string out = "CPU time by phase:";
  for (int i = 0; i < kCount; ++i) out += fmt::format(" {} {:.3f} s", kNames[i], spent_[i]);
  return out;
}

}  // namespace hangscan
