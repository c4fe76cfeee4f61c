#include "watch/wait_stacks.h"

namespace hangscan {

void WaitStacks::join(Recording& batch) {
  for (auto& c : batch.wait_stacks) copies_[{c.tid, c.seq}] = Held{next_++, std::move(c.copy)};
  batch.wait_stacks.clear();
  for (auto& w : batch.waits) {
    if (w.has_user_stack) continue;
    auto it = copies_.find({w.tid, w.seq});
    if (it != copies_.end()) {
      // The kernel stack comes with the wait (taken when the thread ran again).
      std::vector<std::uint64_t> kernel = std::move(w.copy.kernel);
      w.copy = std::move(it->second.copy);
      w.copy.kernel = std::move(kernel);
      w.has_user_stack = true;
    }
    // This sleep and the thread's older ones are over: their copies can never join.
    auto first = copies_.lower_bound({w.tid, 0});
    auto last = copies_.upper_bound({w.tid, w.seq});
    copies_.erase(first, last);
  }
  while (copies_.size() > kMaxHeld) {
    auto oldest = copies_.begin();
    for (auto it = copies_.begin(); it != copies_.end(); ++it) {
      if (it->second.order < oldest->second.order) oldest = it;
    }
    copies_.erase(oldest);
  }
}

std::optional<SampledStack> WaitStacks::take(int tid, std::uint64_t seq) {
  auto it = copies_.find({tid, seq});
  if (it == copies_.end()) return std::nullopt;
  SampledStack c = std::move(it->second.copy);
  copies_.erase(it);
  return c;
}

}  // namespace hangscan
