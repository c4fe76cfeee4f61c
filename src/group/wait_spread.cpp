#include "group/wait_spread.h"

#include <algorithm>

#include "group/analysis.h"
#include "group/stack_key.h"

namespace hangscan {

std::optional<WaitSpread> wait_spread(const JobSnapshot& job, const Analysis& a, const Group& g) {
  if (g.members.size() < 2) return std::nullopt;
  ThreadSelector selector(a.options);
  struct Since {
    double wall;  // when the member's key thread last ran, wall clock
    std::size_t member;
  };
  std::vector<Since> since;
  double reference = 0;  // the latest capture moment among the members
  std::vector<std::string> hosts;
  for (std::size_t m : g.members) {
    const ProcessSnapshot& p = job.processes[m];
    auto sel = selector.select(p);
    if (sel.empty() || !p.captured_at) return std::nullopt;
    const ThreadSnapshot& t = p.threads[sel.front()];
    if (!t.blocked_s) return std::nullopt;
    since.push_back({*p.captured_at - *t.blocked_s, m});
    reference = std::max(reference, *p.captured_at);
    if (std::find(hosts.begin(), hosts.end(), p.host) == hosts.end()) hosts.push_back(p.host);
  }
  auto [first, last] = std::minmax_element(
      since.begin(), since.end(), [](const Since& x, const Since& y) { return x.wall < y.wall; });
  WaitSpread w;
  w.longest_s = std::max(0.0, reference - first->wall);
  w.shortest_s = std::max(0.0, reference - last->wall);
  w.last = last->member;
  w.hosts = hosts.size();
  return w;
}

}  // namespace hangscan
