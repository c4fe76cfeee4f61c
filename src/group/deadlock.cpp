// Cycles in the wait edges.
#include "group/deadlock.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include "group/analysis.h"
#include "group/stack_key.h"
#include "group/wait_graph.h"

namespace hangscan {

namespace {

constexpr std::size_t kMaxCycles = 64;

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool is_own_thread_edge(const ProcessSnapshot& p, const WaitEdge& e) {
  return e.tid && e.pid && *e.pid == p.pid && e.host == p.host;
}

// A cycle rotated so that its smallest key comes first: each cycle is found once.
template <typename Key, typename Item>
void rotate_to_smallest(std::vector<Key>& keys, std::vector<Item>& items) {
  auto first = std::min_element(keys.begin(), keys.end()) - keys.begin();
  std::rotate(keys.begin(), keys.begin() + first, keys.end());
  std::rotate(items.begin(), items.begin() + first, items.end());
}

// Threads of one process waiting on each other (each thread has at most one such edge).
void thread_cycles(const JobSnapshot& job, std::size_t pi, std::vector<Deadlock>& out) {
  const ProcessSnapshot& p = job.processes[pi];
  std::map<int, const WaitEdge*> next;
  for (const ThreadSnapshot& t : p.threads) {
    for (const WaitEdge& e : t.waits_on) {
      if (is_own_thread_edge(p, e) && !next.count(t.tid)) next[t.tid] = &e;
    }
  }
  std::set<std::vector<int>> seen;
  for (const auto& start : next) {
    std::vector<int> path;
    int at = start.first;
    while (next.count(at) && std::find(path.begin(), path.end(), at) == path.end() &&
           path.size() <= next.size()) {
      path.push_back(at);
      at = *next[at]->tid;
    }
    auto loop = std::find(path.begin(), path.end(), at);
    if (loop == path.end()) continue;
    std::vector<int> tids(loop, path.end());
    std::vector<const WaitEdge*> via;
    via.reserve(tids.size());
    for (int tid : tids) via.push_back(next[tid]);
    rotate_to_smallest(tids, via);
    if (!seen.insert(tids).second || out.size() >= kMaxCycles) continue;
    Deadlock d{Deadlock::Kind::threads, {}, via};
    for (int tid : tids) d.members.push_back({pi, tid});
    out.push_back(std::move(d));
  }
}

struct Step {
  std::size_t to = 0;
  ThreadWait wait;
};

// Processes waiting on each other in a cycle through a wait for a child: for each such edge
// u -> v, the shortest way back from v to u.
void process_cycles(const JobSnapshot& job, std::vector<Deadlock>& out) {
  std::map<std::pair<std::string, int>, std::size_t> index;
  for (std::size_t i = 0; i < job.processes.size(); ++i)
    index.emplace(std::pair{job.processes[i].host, job.processes[i].pid}, i);
  std::vector<std::vector<Step>> steps(job.processes.size());
  for (std::size_t i = 0; i < job.processes.size(); ++i) {
    for (const ThreadWait& w : process_wait_edges(job.processes[i])) {
      if (!w.edge->pid) continue;
      auto it = index.find({w.edge->host, *w.edge->pid});
      if (it != index.end() && it->second != i) steps[i].push_back({it->second, w});
    }
  }
  std::set<std::vector<std::size_t>> seen;
  for (std::size_t u = 0; u < steps.size(); ++u) {
    for (const Step& first : steps[u]) {
      if (!starts_with(first.wait.edge->via, "child ")) continue;
      // Breadth first from the child back to u; `came` holds the step into each process.
      std::map<std::size_t, std::pair<std::size_t, const Step*>> came;
      std::deque<std::size_t> todo{first.to};
      came[first.to] = {u, &first};
      while (!todo.empty() && !came.count(u)) {
        std::size_t n = todo.front();
        todo.pop_front();
        for (const Step& s : steps[n]) {
          if (came.emplace(s.to, std::pair{n, &s}).second) todo.push_back(s.to);
        }
      }
      if (!came.count(u)) continue;
      std::vector<std::size_t> ring;
      std::vector<const Step*> used;
      for (std::size_t n = u;;) {
        auto [from, step] = came[n];
        ring.push_back(from);
        used.push_back(step);
        n = from;
        if (n == u) break;
      }
      std::reverse(ring.begin(), ring.end());
      std::reverse(used.begin(), used.end());
      rotate_to_smallest(ring, used);
      if (!seen.insert(ring).second || out.size() >= kMaxCycles) continue;
      Deadlock d{Deadlock::Kind::processes, {}, {}};
      for (std::size_t k = 0; k < ring.size(); ++k) {
        d.members.push_back({ring[k], used[k]->wait.thread->tid});
        d.via.push_back(used[k]->wait.edge);
      }
      out.push_back(std::move(d));
    }
  }
}

}  // namespace

std::vector<Deadlock> find_deadlocks(const JobSnapshot& job) {
  std::vector<Deadlock> out;
  for (std::size_t i = 0; i < job.processes.size(); ++i) thread_cycles(job, i, out);
  process_cycles(job, out);
  return out;
}

Finding deadlock_finding(const Deadlock& d) {
  Finding f{.kind = FindingKind::deadlock, .flag = d.kind == Deadlock::Kind::processes};
  for (const Deadlock::Member& m : d.members) {
    f.members.push_back(m.process);
    f.tids.push_back(m.tid);
  }
  f.via = d.via;
  return f;
}

Deadlock deadlock_of(const Finding& f) {
  Deadlock d{f.flag ? Deadlock::Kind::processes : Deadlock::Kind::threads, {}, f.via};
  for (std::size_t i = 0; i < f.members.size() && i < f.tids.size(); ++i)
    d.members.push_back({f.members[i], f.tids[i]});
  return d;
}

}  // namespace hangscan
