// Grouping: selecting members, building the trie and the equivalence classes.
#include "group/analysis.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "group/deadlock.h"
#include "group/locals_split.h"
#include "group/rank_set.h"
#include "group/roles.h"
#include "group/suspects.h"
#include "group/wait_graph.h"

namespace hangscan {

bool Analysis::is_suspect(std::size_t process_index) const {
  return std::binary_search(suspect_members.begin(), suspect_members.end(), process_index);
}

bool is_groupable(const ProcessSnapshot& p, bool job_has_ranks) {
  if (job_has_ranks) return p.role == "rank";
  return p.role.empty() || p.role == "process" || p.role == kWorkerRole;
}

namespace {

// Sort key of a member: ranked first by rank, then by host and pid.
auto member_order(const ProcessSnapshot& p) {
  return std::make_tuple(p.rank ? 0 : 1, p.rank.value_or(0), std::string_view(p.host), p.pid);
}

}  // namespace

char main_state(const ProcessSnapshot& p) {
  const ThreadSnapshot* t = main_thread(p);
  return t && t->state != '?' ? t->state : p.state;
}

Analysis analyze(const JobSnapshot& job, const GroupOptions& opts) {
  Analysis a;
  a.options = opts;
  a.trie = StackTrie(opts.granularity);
  a.group_of.assign(job.processes.size(), Analysis::kNoGroup);

  bool has_ranks = std::any_of(job.processes.begin(), job.processes.end(),
                               [](const ProcessSnapshot& p) { return p.role == "rank"; });
  ThreadSelector selector(opts);
  if (!selector.regex_ok()) {
    a.note_findings.push_back(
        Finding{.kind = FindingKind::invalid_thread_regex, .value = opts.thread_regex});
  }

  // Key of each member: the trie nodes its selected threads end on (sorted for multi-thread
  // selections so thread order does not matter); the first selected thread is the group's face.
  std::map<std::vector<std::size_t>, std::size_t> by_key;
  std::vector<std::size_t> face;  // per group: trie node of the first selected thread
  std::vector<std::size_t> key;
  std::map<std::pair<const Frame*, std::size_t>, std::size_t> end_node;  // stack -> trie node
  for (std::size_t i = 0; i < job.processes.size(); ++i) {
    const ProcessSnapshot& p = job.processes[i];
    if (!is_groupable(p, has_ranks)) continue;
    a.grouped.push_back(i);
    key.clear();
    for (std::size_t t : selector.select(p)) {
      FrameRange r = key_frames(p.threads[t], opts.top_n);
      // Threads that share a stack (FrameStack) share its frames' address: one trie walk
      // per distinct stack, then only its path is credited with the member.
      auto [known, fresh] = end_node.try_emplace(std::make_pair(r.begin, r.size()), 0);
      if (fresh) known->second = a.trie.insert(i, r);
      else a.trie.insert_again(i, known->second);
      key.push_back(known->second);
    }
    if (key.empty()) key.push_back(a.trie.insert(i, FrameRange{}));
    std::size_t first = key.front();
    if (key.size() > 1) {
      std::sort(key.begin(), key.end());
      key.erase(std::unique(key.begin(), key.end()), key.end());
    }
    auto [it, inserted] = by_key.try_emplace(key, a.groups.size());
    if (inserted) {
      a.groups.emplace_back();
      face.push_back(first);
    }
    a.groups[it->second].members.push_back(i);
  }
  a.trie.finish();

  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    Group& grp = a.groups[g];
    grp.node = face[g];
    std::sort(grp.members.begin(), grp.members.end(), [&](std::size_t x, std::size_t y) {
      return member_order(job.processes[x]) < member_order(job.processes[y]);
    });
    std::set<std::string> hosts;
    const std::string* last_host = nullptr;  // members of one host mostly follow each other
    for (std::size_t m : grp.members) {
      const ProcessSnapshot& p = job.processes[m];
      if (p.rank) grp.ranks.push_back(*p.rank);
      grp.pids.push_back(p.pid);
      if (!last_host || p.host != *last_host) hosts.insert(p.host);
      last_host = &p.host;
    }
    std::sort(grp.ranks.begin(), grp.ranks.end());
    grp.hosts.assign(hosts.begin(), hosts.end());
    std::vector<std::size_t> path = a.trie.path_to(grp.node);
    for (auto it = path.rbegin(); it != path.rend(); ++it)
      grp.frames.push_back(a.trie.node(*it).frame);
  }
  std::stable_sort(a.groups.begin(), a.groups.end(), [&](const Group& x, const Group& y) {
    if (x.members.size() != y.members.size()) return x.members.size() < y.members.size();
    return member_order(job.processes[x.members.front()]) <
           member_order(job.processes[y.members.front()]);
  });
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    for (std::size_t m : a.groups[g].members) a.group_of[m] = g;
  }

  for (Group& g : a.groups) g.wait = wait_spread(job, a, g);
  find_suspects(job, a);
  apply_locals_split(job, a);
  a.wait_findings = pool_wait_findings(job, a);
  for (Finding& w : wait_chain_findings(job)) a.wait_findings.push_back(std::move(w));
  for (const Deadlock& d : find_deadlocks(job)) a.deadlock_findings.push_back(deadlock_finding(d));
  return a;
}

}  // namespace hangscan
