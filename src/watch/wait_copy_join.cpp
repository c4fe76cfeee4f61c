#include "watch/wait_copy_join.h"

#include <utility>

namespace hangscan {

void WaitCopyJoin::join(Recording& got, Clock::time_point now, bool all) {
  std::vector<WaitRecord> ready;
  ready.reserve(got.waits.size());
  for (auto& w : got.waits) {
    if (w.copy_follows && !w.has_user_stack) held_.push_back(Held{now, std::move(w)});
    else ready.push_back(std::move(w));
  }
  for (auto& c : got.wait_copies) {
    for (auto it = held_.begin(); it != held_.end();) {
      WaitRecord& w = it->wait;
      if (w.tid != c.tid || w.pid != c.pid || w.seq < c.first_seq || w.seq > c.last_seq) {
        ++it;
        continue;
      }
      if (c.stale) {
        ++without_copy_;
      } else {
        std::vector<std::uint64_t> kernel = std::move(w.copy.kernel);  // where it slept
        w.copy = c.copy;
        w.copy.kernel = std::move(kernel);
        w.has_user_stack = true;
      }
      ready.push_back(std::move(w));
      it = held_.erase(it);
    }
  }
  got.wait_copies.clear();
  for (auto it = held_.begin(); it != held_.end();) {
    if (all || now - it->since >= kDeadline) {
      ++without_copy_;
      ready.push_back(std::move(it->wait));
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
  got.waits = std::move(ready);
}

}  // namespace hangscan
