// WaitCopyJoin: waits whose user stack the thread copied itself meet that copy here.
//
// Why its own piece: where the kernel can (Linux 6.18's BPF task work), a thread whose long
// wait ended copies its own user stack on its way back to user space, and that copy comes in a
// record of its own, after the wait's, often in a later read of the ring. The watcher takes
// whole waits, so the recorder holds the waits that announced a copy until it comes (at most a
// deadline, then they go on without a stack) and joins the two here.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "watch/records.h"

namespace hangscan {

class WaitCopyJoin {
 public:
  using Clock = std::chrono::steady_clock;

  // Takes the waits of `got` that await a copy, gives the copies of `got` to the waits they
  // belong to (same thread, seq in the copy's range), and puts back into got.waits every wait
  // that has its copy, or was held longer than the deadline, or any held one when `all` (the
  // end of a window): those without a stack. got.wait_copies is emptied.
  void join(Recording& got, Clock::time_point now, bool all);

  // Waits held now (waiting for their copy).
  std::size_t held() const { return held_.size(); }
  // Waits that went on without their copy: it never came, or the thread's registers had moved.
  std::uint64_t without_copy() const { return without_copy_; }

  // How long a wait waits for its copy: the copy is made within microseconds of the wait's end
  // (before the thread runs user code again); a thread killed first never makes it.
  static constexpr std::chrono::seconds kDeadline{2};

 private:
  struct Held {
    Clock::time_point since;
    WaitRecord wait;
  };
  std::vector<Held> held_;
  std::uint64_t without_copy_ = 0;
};

}  // namespace hangscan
