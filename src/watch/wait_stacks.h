// WaitStacks: the user stacks the recorder copied of threads still asleep, joined to the waits
// they belong to when those end.
//
// Why its own piece: a long wait is sent when the thread runs again, from the scheduler
// tracepoint, where the thread's user memory cannot be read; its user stack was copied earlier
// by the task iterator while it slept (bpf/hangscan_watch.bpf.c, copy_wait_stacks). The two
// records name the same sleep by (tid, seq), and only a copy of that very sleep may become the
// wait's stack: one of an earlier or later sleep of the thread is another moment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "watch/records.h"

namespace hangscan {

class WaitStacks {
 public:
  // Joins: first keeps the batch's copies, then gives each wait of the batch without a user
  // stack the copy of its own sleep (tid, seq), if one was made. Copies of sleeps older than a
  // joined one of the same thread are dropped (their wait was not sent); at most `kMaxHeld`
  // copies are held, the oldest sleeps dropped first.
  void join(Recording& batch);
  // The copy of sleep `seq` of `tid`, if held (for a wait still going on at the window's end).
  std::optional<SampledStack> take(int tid, std::uint64_t seq);
  std::size_t held() const { return copies_.size(); }

  static constexpr std::size_t kMaxHeld = 256;  // ~4 MiB of stack copies

 private:
  struct Held {
    std::uint64_t order = 0;  // when it arrived: the first dropped beyond kMaxHeld
    SampledStack copy;
  };
  std::map<std::pair<int, std::uint64_t>, Held> copies_;  // (tid, seq)
  std::uint64_t next_ = 0;
};

}  // namespace hangscan
