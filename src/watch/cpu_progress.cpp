#include "watch/cpu_progress.h"

#include <algorithm>

namespace hangscan {

namespace {
// Wait-loop samples older than this cannot fall in an interval still to be judged (looks come
// every 250 ms; judging every few seconds).
constexpr std::int64_t kKeepWaitsNs = 30'000'000'000;
}  // namespace

void CpuProgress::look(int pid, std::uint64_t ticks, std::int64_t now_ns) {
  State& s = procs_[pid];
  if (s.ticks && ticks > *s.ticks) s.grew.emplace_back(s.looked_ns, now_ns);
  s.ticks = ticks;
  s.looked_ns = now_ns;
}

void CpuProgress::wait_sample(int pid, std::int64_t ts_ns) { procs_[pid].waits.push_back(ts_ns); }

std::optional<std::int64_t> CpuProgress::judge(int pid, std::int64_t now_ns) {
  auto it = procs_.find(pid);
  if (it == procs_.end()) return std::nullopt;
  State& s = it->second;
  std::optional<std::int64_t> latest;
  std::vector<std::pair<std::int64_t, std::int64_t>> later;
  for (const auto& [from, to] : s.grew) {
    if (to > now_ns - kSettleNs) {
      later.emplace_back(from, to);
      continue;
    }
    bool spun = std::any_of(s.waits.begin(), s.waits.end(), [from = from, to = to](auto w) {
      return w > from - kSpinLookbackNs && w <= to;
    });
    if (!spun) latest = std::max(latest.value_or(to), to);
  }
  s.grew = std::move(later);
  std::erase_if(s.waits, [now_ns](std::int64_t w) { return w < now_ns - kKeepWaitsNs; });
  return latest;
}

}  // namespace hangscan
