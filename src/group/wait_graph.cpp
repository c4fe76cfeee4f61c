// Wait edges joined into chains.
#include "group/wait_graph.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "group/analysis.h"
#include "group/stack_key.h"

namespace hangscan {

namespace {

using Key = std::pair<std::string, int>;  // (host, pid)

std::map<Key, std::size_t> process_index(const JobSnapshot& job) {
  std::map<Key, std::size_t> out;
  for (std::size_t i = 0; i < job.processes.size(); ++i)
    out.emplace(Key{job.processes[i].host, job.processes[i].pid}, i);
  return out;
}

// "tcp A -> B" -> "B -> A": how the other end lists the same connection.
std::optional<std::string> reversed_tcp(const std::string& via) {
  if (via.rfind("tcp ", 0) != 0) return std::nullopt;
  auto arrow = via.find(" -> ");
  if (arrow == std::string::npos) return std::nullopt;
  std::string a = via.substr(4, arrow - 4), b = via.substr(arrow + 4);
  if (a.empty() || b.empty() || b.find(' ') != std::string::npos) return std::nullopt;
  return b + " -> " + a;
}

bool is_own(const ProcessSnapshot& p, const WaitEdge& e) {
  return e.pid && *e.pid == p.pid && e.host == p.host;
}

// The edges that stand for the process (see process_waits()).
std::vector<const WaitEdge*> process_edges(const ProcessSnapshot& p) {
  std::vector<const WaitEdge*> out;
  for (const ThreadWait& w : process_wait_edges(p)) out.push_back(w.edge);
  return out;
}

}  // namespace

const WaitEdge* own_thread_edge(const ProcessSnapshot& p) {
  const ThreadSnapshot* m = main_thread(p);
  if (!m) return nullptr;
  for (const WaitEdge& e : m->waits_on) {
    if (is_own(p, e) && e.tid) return &e;
  }
  return nullptr;
}

std::vector<ThreadWait> process_wait_edges(const ProcessSnapshot& p) {
  std::vector<ThreadWait> out;
  const ThreadSnapshot* m = main_thread(p);
  if (!m) return out;
  bool on_own = false;
  for (const WaitEdge& e : m->waits_on) {
    if (!is_own(p, e)) out.push_back({m, &e});
    on_own = on_own || is_own(p, e);
  }
  if (!out.empty() || !(on_own || (m->waits_on.empty() && m->syscall && *m->syscall == "futex")))
    return out;
  for (const ThreadSnapshot& t : p.threads) {
    for (const WaitEdge& e : t.waits_on) {
      if (!is_own(p, e)) out.push_back({&t, &e});
    }
  }
  return out;
}

void link_wait_edges(JobSnapshot& job) {
  std::map<std::string, std::vector<std::size_t>> by_connection;
  for (std::size_t i = 0; i < job.processes.size(); ++i) {
    for (const std::string& c : job.processes[i].tcp_connections) by_connection[c].push_back(i);
  }
  std::optional<std::map<Key, std::size_t>> index;  // built at the first edge to a pid
  for (ProcessSnapshot& p : job.processes) {
    for (ThreadSnapshot& t : p.threads) {
      for (WaitEdge& e : t.waits_on) {
        if (auto rev = reversed_tcp(e.via)) {
          auto it = by_connection.find(*rev);
          if (it != by_connection.end() && it->second.size() == 1) {
            const ProcessSnapshot& q = job.processes[it->second.front()];
            e.host = q.host;
            e.pid = q.pid;
          }
        }
        if (!e.pid) continue;
        if (!index) index = process_index(job);
        auto q = index->find(Key{e.host, *e.pid});
        if (q != index->end()) e.rank = job.processes[q->second].rank;
      }
    }
  }
}

std::vector<ProcessWait> process_waits(const JobSnapshot& job) {
  std::vector<ProcessWait> out;
  std::optional<std::map<Key, std::size_t>> index;  // built at the first edge to a pid
  bool has_ranks = std::any_of(job.processes.begin(), job.processes.end(),
                               [](const ProcessSnapshot& p) { return p.role == "rank"; });
  for (std::size_t i = 0; i < job.processes.size(); ++i) {
    if (!is_groupable(job.processes[i], has_ranks)) continue;
    std::set<std::size_t> seen;
    for (const WaitEdge* e : process_edges(job.processes[i])) {
      if (!e->pid) continue;
      if (!index) index = process_index(job);
      auto q = index->find(Key{e->host, *e->pid});
      if (q == index->end() || q->second == i || !is_groupable(job.processes[q->second], has_ranks))
        continue;
      if (!seen.insert(q->second).second) continue;
      out.push_back({i, q->second, e->via});
    }
  }
  return out;
}

std::vector<Finding> wait_chain_findings(const JobSnapshot& job) {
  std::vector<ProcessWait> edges = process_waits(job);
  if (edges.empty()) return {};
  std::map<std::size_t, std::set<std::size_t>> out_of, in_of;
  for (const ProcessWait& e : edges) {
    out_of[e.from].insert(e.to);
    in_of[e.to].insert(e.from);
  }
  const std::set<std::size_t> none;
  auto outs = [&](std::size_t n) -> const std::set<std::size_t>& {
    auto it = out_of.find(n);
    return it == out_of.end() ? none : it->second;
  };
  auto ins = [&](std::size_t n) -> const std::set<std::size_t>& {
    auto it = in_of.find(n);
    return it == in_of.end() ? none : it->second;
  };
  std::vector<Finding> findings;
  std::set<std::size_t> reaches_a_root;
  for (const auto& [s, waiters] : in_of) {
    if (out_of.count(s)) continue;  // not a root: it waits on a process of the job
    std::set<std::size_t> reach;
    std::vector<std::size_t> todo(waiters.begin(), waiters.end());
    while (!todo.empty()) {
      std::size_t n = todo.back();
      todo.pop_back();
      if (!reach.insert(n).second) continue;
      for (std::size_t w : ins(n)) todo.push_back(w);
    }
    reaches_a_root.insert(reach.begin(), reach.end());
    // A chain: everyone waits on exactly one process and is waited on by at most one.
    bool chain =
        std::all_of(reach.begin(), reach.end(),
                    [&](std::size_t n) { return outs(n).size() == 1 && ins(n).size() <= 1; }) &&
        waiters.size() == 1;
    Finding f{.kind = FindingKind::wait_chain, .others = {s}, .flag = chain};
    if (chain) {
      for (std::size_t n = *waiters.begin(); f.members.size() <= reach.size();
           n = *ins(n).begin()) {
        f.members.push_back(n);
        if (ins(n).empty()) break;
      }
      std::reverse(f.members.begin(), f.members.end());
    } else {
      f.members.assign(reach.begin(), reach.end());
    }
    findings.push_back(std::move(f));
  }
  std::vector<std::size_t> cycle;
  for (const auto& [n, targets] : out_of) {
    if (!reaches_a_root.count(n)) cycle.push_back(n);
  }
  if (!cycle.empty())
    findings.push_back(Finding{.kind = FindingKind::wait_cycle, .members = cycle});
  return findings;
}

}  // namespace hangscan
