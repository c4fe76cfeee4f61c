#include "group/wait_spread.h"

#include <algorithm>

#include <fmt/format.h>

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

std::string seconds_words(double s) {
  if (s < 100) return fmt::format("{:.1f} s", s);
  std::string out = fmt::format("{:.0f} s", s);
  if (s >= 3600) {
    auto total_min = static_cast<long long>(s / 60);
    out += fmt::format(" ({} h {} min)", total_min / 60, total_min % 60);
  }
  return out;
}

std::string wait_sentence(const JobSnapshot& job, const Group& g, const WaitSpread& w) {
  std::string where =
      g.frames.empty() ? std::string("(no stack)") : short_frame_label(g.frames.front());
  std::string blocked = fmt::format("{:.1f}", w.shortest_s) == fmt::format("{:.1f}", w.longest_s)
                            ? seconds_words(w.longest_s)
                            : fmt::format("{:.1f}-{}", w.shortest_s, seconds_words(w.longest_s));
  // Below the clocks' resolution (and the capture's own duration) an order means nothing.
  std::string arrival = w.spread_s() < kSameArrival_s
                            ? fmt::format("arrived within {:.1f} s of each other", kSameArrival_s)
                            : fmt::format("arrived over {}, {} last", seconds_words(w.spread_s()),
                                          member_name(job.processes[w.last]));
  std::string s = fmt::format("{} in {}: blocked {}, {}", describe_members(job, g.members), where,
                              blocked, arrival);
  if (w.hosts > 1)
    s += fmt::format(" (across {} hosts: the spread includes their clocks' skew)", w.hosts);
  return s;
}

}  // namespace hangscan
