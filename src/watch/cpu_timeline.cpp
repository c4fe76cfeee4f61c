#include "watch/cpu_timeline.h"

#include <algorithm>
#include <cmath>

namespace hangscan {

double cpu_share(const std::map<int, std::size_t>& thread_samples, double ticks) {
  if (ticks <= 0) return 0;
  double on = 0;
  for (const auto& [tid, n] : thread_samples) on += std::min(static_cast<double>(n), ticks);
  return on / ticks;
}

void CpuTimeline::add(int pid, int tid, std::int64_t ts_ns) {
  if (ts_ns < start_ns_) return;
  while (static_cast<std::size_t>((ts_ns - start_ns_) / slot_ns_) >= kMaxSlots) widen();
  auto at = static_cast<std::size_t>((ts_ns - start_ns_) / slot_ns_);
  std::vector<Slot>& slots = procs_[pid];
  if (slots.size() <= at) slots.resize(at + 1);
  ++slots[at][tid];
}

// Every two slots become one of twice the width.
void CpuTimeline::widen() {
  for (auto& [pid, slots] : procs_) {
    std::vector<Slot> wide((slots.size() + 1) / 2);
    for (std::size_t i = 0; i < slots.size(); ++i) {
      for (const auto& [tid, n] : slots[i]) wide[i / 2][tid] += n;
    }
    slots = std::move(wide);
  }
  slot_ns_ *= 2;
}

std::int64_t CpuTimeline::bucket_ns(std::int64_t end_ns, int hz) const {
  auto slots_for = [this](std::int64_t ns) { return (ns + slot_ns_ - 1) / slot_ns_; };
  std::int64_t slots = slots_for(std::max<std::int64_t>(end_ns - start_ns_, 1));
  std::int64_t per_bucket =
      (slots + static_cast<std::int64_t>(kMaxBuckets) - 1) / static_cast<std::int64_t>(kMaxBuckets);
  std::int64_t ticks_ns = kMinTicks * (1'000'000'000 / std::max(hz, 1));
  return std::max(per_bucket, slots_for(ticks_ns)) * slot_ns_;
}

std::vector<double> CpuTimeline::shares(int pid, std::int64_t end_ns, int hz) const {
  const std::int64_t width = bucket_ns(end_ns, hz);
  const std::int64_t span = std::max<std::int64_t>(end_ns - start_ns_, 1);
  const auto buckets = static_cast<std::size_t>((span + width - 1) / width);
  const std::size_t per_bucket = static_cast<std::size_t>(width / slot_ns_);
  std::vector<double> out(buckets, 0.0);
  auto it = procs_.find(pid);
  if (it == procs_.end()) return out;
  const std::vector<Slot>& slots = it->second;
  for (std::size_t b = 0; b < buckets; ++b) {
    std::map<int, std::size_t> threads;
    for (std::size_t s = b * per_bucket; s < (b + 1) * per_bucket && s < slots.size(); ++s) {
      for (const auto& [tid, n] : slots[s]) threads[tid] += n;
    }
    std::int64_t from = static_cast<std::int64_t>(b) * width;
    double seconds = static_cast<double>(std::min(from + width, span) - from) / 1e9;
    out[b] = std::round(cpu_share(threads, hz * seconds) * 1000) / 1000;
  }
  return out;
}

}  // namespace hangscan
