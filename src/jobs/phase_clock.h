// PhaseClock: where the CPU time of a run over many targets goes, summed per phase.
//
// Why: `core -v` over hundreds of cores must say whether opening, capturing, reading the
// environment or explaining the crash dominates; the job loop laps it between its steps.
#pragma once

#include <array>
#include <string>

namespace hangscan {

class PhaseClock {
 public:
  enum Phase { open, capture, environ, crash, report, kCount };
  void start();
  void lap(Phase p);
  // "CPU time by phase: open 0.012 s capture ..."
  std::string summary() const;

 private:
  double last_ = 0;
  std::array<double, kCount> spent_{};
};

}  // namespace hangscan
