// Interning stacks by content.
#include "util/stack_table.h"

#include "util/hash_mix.h"

namespace hangscan {

FrameStack StackTable::intern(const FrameStack& stack) {
  if (stack.empty()) return stack;
  std::size_t h = stack.size();
  for (const Frame& f : stack) hash_mix(h, frame_content_hash(f));
  std::vector<FrameStack>& bucket = buckets_[h];
  for (const FrameStack& s : bucket) {
    if (s == stack) return s;
  }
  bucket.push_back(stack);
  ++count_;
  return stack;
}

void StackTable::intern_job(JobSnapshot& job) {
  auto one = [&](FrameStack& s) {
    if (s.empty()) return;
    auto [it, fresh] = by_id_.try_emplace(s.id());
    if (fresh) it->second = Seen{s, intern(s)};
    s = it->second.interned;
  };
  for (ProcessSnapshot& p : job.processes) {
    for (ThreadSnapshot& t : p.threads) {
      one(t.frames);
      one(t.native_frames);
      one(t.kernel_frames);
    }
  }
}

}  // namespace hangscan
