// StackTable: one copy of each distinct stack of a run.
//
// Why: ranks of one job stand in few distinct stacks. Interning every thread's stacks through
// one table makes equal stacks share one FrameStack, so the model's memory grows with distinct
// stacks instead of ranks x threads x depth, and grouping can key on FrameStack::id().
// Not thread-safe: one table per reader or per merge.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "hangscan/model.h"

namespace hangscan {

class StackTable {
 public:
  // The table's copy of `stack` (added when new). Empty stacks stay empty.
  FrameStack intern(const FrameStack& stack);
  // Interns frames, native_frames and kernel_frames of every thread of `job`; threads that
  // already share a stack (a reader's table, or SharedStacks across documents) cost one lookup
  // by id, not a hash of its frames, for as long as the table lives.
  void intern_job(JobSnapshot& job);
  std::size_t size() const { return count_; }

 private:
  // A stack seen by intern_job, held with its interned copy so that its address is not reused.
  struct Seen {
    FrameStack seen;
    FrameStack interned;
  };
  std::unordered_map<const void*, Seen> by_id_;
  // Buckets by content hash; a bucket holds every distinct stack with that hash.
  std::unordered_map<std::size_t, std::vector<FrameStack>> buckets_;
  std::size_t count_ = 0;
};

}  // namespace hangscan
