#include "group/death_findings.h"

#include <algorithm>
#include <ctime>

#include "group/rank_set.h"
#include "group/stack_key.h"

namespace hangscan {

namespace {

bool dead(const ProcessSnapshot& p) { return p.state == 'Z' || p.state == 'X'; }

// Where the living majority waits (its deepest Python frame, else its innermost frame): the
// finding's `others` and `place`; none when no living group has a frame.
void living_majority(const JobSnapshot& job, const Analysis& a, Finding& f) {
  const Group* best = nullptr;
  for (const Group& g : a.groups) {
    bool living = std::none_of(g.members.begin(), g.members.end(),
                               [&](std::size_t m) { return dead(job.processes[m]); });
    if (living && (!best || g.members.size() > best->members.size())) best = &g;
  }
  if (!best || best->frames.empty()) return;
  std::vector<std::size_t> path = a.trie.path_to(best->node);  // outermost first
  std::size_t where = path.back();
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    if (a.trie.node(*it).frame.kind == FrameKind::python) {
      where = *it;
      break;
    }
  }
  f.others = best->members;
  f.place = FrameRef{.node = where};
}

// The rank of a reaped worker whose pid its launcher's own list names (worker_local_ranks): its
// local rank plus the RANK - LOCAL_RANK its captured siblings (the launcher's other children on
// its host) share. nullopt when no launcher names the pid or the siblings disagree.
std::optional<int> rank_from_launcher(const JobSnapshot& job, const Death& d) {
  if (!d.pid) return std::nullopt;
  for (const ProcessSnapshot& l : job.processes) {
    auto it = l.worker_local_ranks.find(*d.pid);
    if (it == l.worker_local_ranks.end() || (!d.host.empty() && l.host != d.host)) continue;
    std::optional<int> offset;
    for (const ProcessSnapshot& s : job.processes) {
      if (s.ppid != l.pid || s.host != l.host || !s.rank || !s.local_rank) continue;
      if (offset && *offset != *s.rank - *s.local_rank) return std::nullopt;
      offset = *s.rank - *s.local_rank;
    }
    if (offset) return it->second + *offset;
  }
  return std::nullopt;
}

}  // namespace

DeathFindings death_findings(const JobSnapshot& job, Analysis& a,
                             std::vector<std::size_t>& flagged) {
  DeathFindings out;
  const std::string* first_host = nullptr;
  bool multi_host = false;
  for (const ProcessSnapshot& p : job.processes) {
    if (p.host.empty()) continue;
    if (!first_host) first_host = &p.host;
    else if (p.host != *first_host) multi_host = true;
    if (multi_host) break;
  }
  std::vector<std::size_t> dead_unranked;
  std::vector<std::size_t> with_death;
  for (std::size_t m : a.grouped) {
    const ProcessSnapshot& p = job.processes[m];
    if (!p.death) continue;
    with_death.push_back(m);
    if (!p.rank) dead_unranked.push_back(m);
  }
  std::vector<int> missing = a.missing_ranks;
  // A zombie's environment is gone with its memory: it is the missing rank when it is the only
  // dead process without a rank and that the only missing rank.
  std::optional<int> zombie_rank;
  if (dead_unranked.size() == 1 && missing.size() == 1) zombie_rank = missing.front();
  for (std::size_t m : with_death) {
    const ProcessSnapshot& p = job.processes[m];
    Death d = *p.death;
    if (d.host.empty()) d.host = p.host;
    std::optional<int> rank = p.rank;
    Finding f{.kind = FindingKind::death, .members = {m}};
    f.rank_from = rank ? Finding::RankFrom::own : Finding::RankFrom::none;
    if (!rank && zombie_rank) {
      rank = zombie_rank;
      out.ranks.insert(*rank);
      f.rank_from = Finding::RankFrom::only_missing;
    }
    f.rank = rank;
    f.host = multi_host ? d.host : "";
    f.flag = rank.has_value();
    f.death = std::move(d);
    if (p.state == 'Z') f.zombie_of = p.ppid;
    living_majority(job, a, f);
    a.findings.push_back(std::move(f));
    out.members.insert(m);
    flagged.push_back(m);
  }
  for (Group& g : a.groups) {
    if (std::all_of(g.members.begin(), g.members.end(),
                    [&](std::size_t m) { return out.members.count(m) > 0; }))
      g.suspect = true;
  }
  // Reaped deaths from the kernel log: linked when one death meets one missing rank.
  std::vector<int> unexplained;
  for (int r : missing) {
    if (!out.ranks.count(r)) unexplained.push_back(r);
  }
  if (unexplained.empty()) return out;
  // Exactly first (the launcher's own list), then the one death left meeting the one rank left.
  std::vector<std::optional<int>> known;
  for (const Death& d : job.deaths) {
    known.push_back(rank_from_launcher(job, d));
    if (known.back()) std::erase(unexplained, *known.back());
  }
  auto unknown = std::count(known.begin(), known.end(), std::nullopt);
  for (std::size_t i = 0; i < job.deaths.size(); ++i) {
    const Death& d = job.deaths[i];
    std::optional<int> rank = known[i];
    Finding f{.kind = FindingKind::death, .death = d};
    if (rank) f.rank_from = Finding::RankFrom::launcher;
    if (!rank && unknown == 1 && unexplained.size() == 1) {
      rank = unexplained.front();
      f.rank_from = Finding::RankFrom::only_missing;
    }
    f.rank = rank;
    f.host = multi_host ? d.host : "";
    f.flag = rank.has_value();
    if (!rank) f.ranks = unexplained;
    else out.ranks.insert(*rank);
    living_majority(job, a, f);
    a.findings.push_back(std::move(f));
  }
  return out;
}

}  // namespace hangscan
