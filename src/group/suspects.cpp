// Suspect rules: where ranks part ways with a clear majority, bad process states, missing ranks.
#include "group/suspects.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "group/death_findings.h"
#include "group/rank_set.h"
#include "group/roles.h"

namespace hangscan {

namespace {

// One branch at a divergence: a child subtree, or the members whose stack ends at the node.
struct Part {
  std::size_t node = 0;
  bool ending = false;
  std::size_t weight = 0;
  std::vector<std::size_t> groups;  // indexes into Analysis::groups
};

class MajorityFinder {
 public:
  MajorityFinder(const JobSnapshot& job, Analysis& a)
      : job_(job), a_(a), trie_(a.trie), selector_(a.options), weight_(trie_.nodes().size(), 0) {
    for (const Group& g : a_.groups) {
      for (std::size_t n = g.node;; n = trie_.node(n).parent) {
        weight_[n] += g.members.size();
        if (n == StackTrie::kRoot) break;
      }
    }
    multi_host_ = std::any_of(a_.grouped.begin(), a_.grouped.end(), [&](std::size_t m) {
      return job_.processes[m].host != job_.processes[a_.grouped.front()].host;
    });
  }

  void run() {
    std::size_t node = StackTrie::kRoot;
    bool first = true;
    while (weight_[node] > 0) {
      std::vector<Part> parts = parts_at(node);
      if (parts.size() == 1) {
        if (parts[0].ending) break;
        node = parts[0].node;
        continue;
      }
      const Part* majority = nullptr;
      for (const Part& p : parts) {
        if (p.weight * 2 > weight_[node]) majority = &p;
      }
      if (!majority) {
        if (first) note_no_majority(node, parts);
        break;
      }
      std::optional<std::vector<std::size_t>> with;  // the majority's members, for its findings
      for (const Part& p : parts) {
        if (&p == majority) continue;
        for (std::size_t g : p.groups) {
          // At the root a stack whose outer frames were never unwound parts from everyone;
          // that says nothing about where the rank is.
          if (first && incomplete(a_.groups[g])) {
            note_incomplete(a_.groups[g]);
          } else if (explained_by_death(a_.groups[g])) {
            // death_findings says how they died and where the others wait.
          } else if (first || !all_running(a_.groups[g])) {
            if (!with) with = members_of(*majority);
            flag(g, node, p, *majority, *with);
          }
        }
      }
      first = false;
      if (majority->ending) break;
      node = majority->node;
    }
    if (a_.groups.size() == 1 && a_.grouped.size() >= 2) {
      a_.note_findings.push_back(Finding{
          .kind = FindingKind::same_stack, .flag = all_ranked(), .count = a_.grouped.size()});
    }
  }

  std::vector<std::size_t> flagged;

 private:
  bool in_subtree(std::size_t n, std::size_t top) const {
    while (trie_.node(n).depth > trie_.node(top).depth) n = trie_.node(n).parent;
    return n == top;
  }

  std::vector<Part> parts_at(std::size_t node) const {
    std::vector<Part> parts;
    std::size_t child_sum = 0;
    for (std::size_t c : trie_.node(node).children) {
      if (weight_[c] == 0) continue;
      parts.push_back(Part{c, false, weight_[c], {}});
      child_sum += weight_[c];
    }
    if (weight_[node] > child_sum) parts.push_back(Part{node, true, weight_[node] - child_sum, {}});
    for (std::size_t g = 0; g < a_.groups.size(); ++g) {
      std::size_t face = a_.groups[g].node;
      for (Part& p : parts) {
        if (p.ending ? face == node : in_subtree(face, p.node)) {
          p.groups.push_back(g);
          break;
        }
      }
    }
    return parts;
  }

  bool all_ranked() const {
    return std::all_of(a_.grouped.begin(), a_.grouped.end(),
                       [&](std::size_t m) { return job_.processes[m].rank.has_value(); });
  }

  bool explained_by_death(const Group& g) const {
    return std::all_of(g.members.begin(), g.members.end(),
                       [&](std::size_t m) { return job_.processes[m].death.has_value(); });
  }

  // Every member's key thread (the first selected) stopped unwinding before its entry point.
  bool incomplete(const Group& g) const {
    return std::all_of(g.members.begin(), g.members.end(), [&](std::size_t m) {
      const ProcessSnapshot& p = job_.processes[m];
      auto sel = selector_.select(p);
      return !sel.empty() && p.threads[sel.front()].incomplete;
    });
  }

  void note_incomplete(const Group& g) {
    const ProcessSnapshot& p = job_.processes[g.members.front()];
    const ThreadSnapshot& t = p.threads[selector_.select(p).front()];
    Finding f{.kind = FindingKind::incomplete_stack, .members = g.members};
    if (!t.frames.empty()) f.frames.push_back(FrameRef{.frame = &t.frames.back()});
    f.hosts = hosts_of(g.members);
    a_.note_findings.push_back(std::move(f));
  }

  bool all_running(const Group& g) const {
    return std::all_of(g.members.begin(), g.members.end(),
                       [&](std::size_t m) { return main_state(job_.processes[m]) == 'R'; });
  }

  std::vector<std::size_t> members_of(const Part& p) const {
    std::vector<std::size_t> out;
    for (std::size_t g : p.groups) {
      out.insert(out.end(), a_.groups[g].members.begin(), a_.groups[g].members.end());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // The frame member `m` has at trie depth `depth` (its first selected thread), so sentences
  // show that member's own line, not a representative's.
  const Frame* member_frame(std::size_t m, int depth) const {
    const ProcessSnapshot& p = job_.processes[m];
    auto sel = selector_.select(p);
    if (sel.empty() || depth <= 0) return nullptr;
    FrameRange r = key_frames(p.threads[sel.front()], a_.options.top_n);
    if (static_cast<std::size_t>(depth) > r.size()) return nullptr;
    return r.end - depth;
  }

  FrameRef label_at(std::size_t m, std::size_t node) const {
    const Frame* f = member_frame(m, trie_.node(node).depth);
    return f ? FrameRef{.frame = f} : FrameRef{.node = node};
  }

  // Where the majority is: the deepest Python frame on the path all its members share, or the
  // first frame where it parted from the others when there is no Python frame.
  // An empty reference: an empty stack.
  FrameRef majority_place(std::size_t node, const Part& majority) const {
    if (majority.ending) return node == StackTrie::kRoot ? FrameRef{} : FrameRef{.node = node};
    std::size_t cur = majority.node;
    std::size_t python = StackTrie::kRoot;
    while (true) {
      if (trie_.node(cur).frame.kind == FrameKind::python) python = cur;
      std::size_t next = StackTrie::kRoot;
      int live = 0;
      for (std::size_t c : trie_.node(cur).children) {
        if (weight_[c] > 0) {
          ++live;
          next = c;
        }
      }
      if (live != 1 || weight_[next] != weight_[cur]) break;
      cur = next;
    }
    return FrameRef{.node = python != StackTrie::kRoot ? python : majority.node};
  }

  // Where the odd members are: [the frame where they parted,] its first child and the deepest
  // Python frame below it ("in worker (a.py:19) -> ... -> time.sleep"); none: no stack.
  void odd_frames(const Group& g, std::size_t node, const Part& part, Finding& f) const {
    std::size_t m = g.members.front();
    if (part.ending) {
      if (node != StackTrie::kRoot) f.frames.push_back(label_at(m, node));
      return;
    }
    std::vector<std::size_t> path = trie_.path_to(g.node);
    std::size_t start =
        static_cast<std::size_t>(trie_.node(node).depth);  // path[start] = first child
    std::size_t deepest = path.size() - 1;
    for (std::size_t i = path.size(); i-- > start;) {
      if (trie_.node(path[i]).frame.kind == FrameKind::python) {
        deepest = i;
        break;
      }
    }
    if (node != StackTrie::kRoot) f.frames.push_back(label_at(m, node));
    f.frames.push_back(label_at(m, path[start]));
    if (deepest > start + 1) f.gap_before = f.frames.size();
    if (deepest > start) f.frames.push_back(label_at(m, path[deepest]));
  }

  // The hosts of the members, when the grouped processes span several.
  std::vector<std::string> hosts_of(const std::vector<std::size_t>& members) const {
    if (!multi_host_) return {};
    std::set<std::string> hosts;
    for (std::size_t m : members) hosts.insert(job_.processes[m].host);
    return {hosts.begin(), hosts.end()};
  }

  void flag(std::size_t gi, std::size_t node, const Part& part, const Part& majority,
            const std::vector<std::size_t>& with) {
    Group& g = a_.groups[gi];
    g.suspect = true;
    flagged.insert(flagged.end(), g.members.begin(), g.members.end());
    Finding f{.kind = FindingKind::divergence, .members = g.members, .others = with};
    odd_frames(g, node, part, f);
    f.place = majority_place(node, majority);
    f.hosts = hosts_of(g.members);
    a_.findings.push_back(std::move(f));
  }

  void note_no_majority(std::size_t node, const std::vector<Part>& parts) {
    Finding f{.kind = FindingKind::no_majority,
              .place = node == StackTrie::kRoot ? FrameRef{} : FrameRef{.node = node}};
    f.count = parts.size();
    for (const Part& p : parts) {
      f.parts.push_back(members_of(p));
      f.frames.push_back(FrameRef{.node = p.ending ? node : p.node});
    }
    a_.note_findings.push_back(std::move(f));
  }

  const JobSnapshot& job_;
  Analysis& a_;
  const StackTrie& trie_;
  ThreadSelector selector_;
  std::vector<std::size_t> weight_;  // grouped members whose face path passes through a node
  bool multi_host_ = false;
};

void state_findings(const JobSnapshot& job, Analysis& a, std::vector<std::size_t>& flagged,
                    const std::set<std::size_t>& explained) {
  std::map<std::pair<char, std::string>, std::vector<std::size_t>> by_state;
  for (std::size_t m : a.grouped) {
    const ProcessSnapshot& p = job.processes[m];
    if (explained.count(m)) continue;
    char s = (p.state == 'Z' || p.state == 'X') ? p.state : main_state(p);
    if (s != 'Z' && s != 'X' && s != 'T' && s != 't' && s != 'D') continue;
    std::string wchan;
    const ThreadSnapshot* main = main_thread(p);
    if (main && main->wchan) wchan = *main->wchan;
    by_state[{s, s == 'D' ? wchan : std::string()}].push_back(m);
  }
  for (const auto& entry : by_state) {
    const auto& key = entry.first;
    const std::vector<std::size_t>& members =
        entry.second;  // named: lambdas cannot capture bindings in clang 14
    a.findings.push_back(Finding{.kind = FindingKind::bad_state,
                                 .members = members,
                                 .state = key.first,
                                 .wchan = key.second});
    flagged.insert(flagged.end(), members.begin(), members.end());
    for (Group& g : a.groups) {
      if (std::all_of(g.members.begin(), g.members.end(), [&](std::size_t x) {
            return std::find(members.begin(), members.end(), x) != members.end();
          })) {
        g.suspect = true;
      }
    }
  }
}

void missing_ranks(const JobSnapshot& job, Analysis& a) {
  std::optional<int> ws = job.expected_world_size;
  std::vector<int> present;  // sorted and made unique below (a set of 100,000 cost 45 ms)
  for (const ProcessSnapshot& p : job.processes) {
    if (p.role != "rank" && !is_groupable(p, false)) continue;
    if (p.rank) present.push_back(*p.rank);
    if (!job.expected_world_size && p.world_size && (!ws || *p.world_size > *ws)) ws = p.world_size;
  }
  a.world_size = ws;
  if (!ws || *ws <= 0) return;
  if (*ws > kMaxWorldSize) {
    a.note_findings.push_back(
        Finding{.kind = FindingKind::implausible_world_size, .world_size = *ws});
    return;
  }
  std::sort(present.begin(), present.end());
  auto next = std::lower_bound(present.begin(), present.end(), 0);
  for (int r = 0; r < *ws; ++r) {
    while (next != present.end() && *next < r) ++next;
    if (next == present.end() || *next != r) a.missing_ranks.push_back(r);
  }
}

void missing_findings(Analysis& a, const std::set<int>& explained) {
  std::vector<int> missing;
  for (int r : a.missing_ranks) {
    if (!explained.count(r)) missing.push_back(r);
  }
  if (missing.empty() || !a.world_size) return;
  a.findings.push_back(
      Finding{.kind = FindingKind::missing_ranks, .ranks = missing, .world_size = *a.world_size});
}

}  // namespace

void find_suspects(const JobSnapshot& job, Analysis& a) {
  std::vector<std::size_t> flagged;
  if (!worker_findings(job, a, flagged)) {  // a pool's verdict leaves no majority to find
    MajorityFinder majority(job, a);
    majority.run();
    flagged.insert(flagged.end(), majority.flagged.begin(), majority.flagged.end());
  }
  missing_ranks(job, a);
  DeathFindings deaths = death_findings(job, a, flagged);
  state_findings(job, a, flagged, deaths.members);
  missing_findings(a, deaths.ranks);

  std::sort(flagged.begin(), flagged.end());
  flagged.erase(std::unique(flagged.begin(), flagged.end()), flagged.end());
  a.suspect_members = flagged;
  std::vector<int> ranks = a.missing_ranks;
  for (std::size_t m : flagged) {
    if (job.processes[m].rank) ranks.push_back(*job.processes[m].rank);
  }
  a.suspects = RankSet(std::move(ranks)).values();
}

}  // namespace hangscan
