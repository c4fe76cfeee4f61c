// Deadline: every wait in hangscan has one.
//
// Why: a hang tool must not hang. Waits on ptrace, srun, pdsh or a node take a Deadline and
// give up when it passes, reporting what is missing instead.
#pragma once

#include <chrono>
#include <cstdint>

namespace hangscan {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(std::chrono::milliseconds d) { return Deadline(Clock::now() + d); }
  static Deadline never() { return Deadline(Clock::time_point::max()); }

  bool expired() const { return Clock::now() >= at_; }
  std::chrono::milliseconds remaining() const {
    auto now = Clock::now();
    if (now >= at_) return std::chrono::milliseconds(0);
    if (at_ == Clock::time_point::max()) return std::chrono::milliseconds(INT64_MAX / 2);
    return std::chrono::duration_cast<std::chrono::milliseconds>(at_ - now);
  }
  Clock::time_point at() const { return at_; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

// Microseconds on the monotonic clock, for pause measurements.
inline std::int64_t monotonic_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace hangscan
