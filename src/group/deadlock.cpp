// Cycles in the wait edges.
#include "group/deadlock.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "group/analysis.h"
#include "group/stack_key.h"
#include "group/wait_graph.h"

namespace hangscan {

namespace {

constexpr std::size_t kMaxCycles = 64;

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Frames of libraries (the C library, libstdc++ and their headers, Python's own modules and
// site-packages) say how a thread waits, not where its program is.
bool library_frame(const Frame& f) {
  if (f.kind == FrameKind::python) return f.file->find("/lib/python") != std::string::npos;
  for (std::string_view dir : {"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/"}) {
    if (starts_with(f.module, dir)) return true;
  }
  return starts_with(*f.file, "/usr/include/") ||
         f.file->find("/include/c++/") != std::string::npos;
}

// "bank.cpp:14": the innermost Python frame with a line outside libraries, else such a native
// frame, else the innermost frame with a line.
std::string where_thread(const ThreadSnapshot& t) {
  const Frame* fallback = nullptr;
  for (bool python : {true, false}) {
    for (const Frame& f : t.frames) {
      if ((f.kind == FrameKind::python) != python || !f.file || !f.line) continue;
      if (!library_frame(f)) return fmt::format("{}:{}", base_name(*f.file), *f.line);
      if (!fallback) fallback = &f;
    }
  }
  return fallback ? fmt::format("{}:{}", base_name(*fallback->file), *fallback->line) : "";
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

bool writes(const ThreadSnapshot* t) {
  static const std::set<std::string> calls = {"write", "writev", "sendto", "sendmsg"};
  return t && t->syscall && calls.count(*t->syscall);
}

// "pid 4711 (python3, popen_deadlock.py:20)", or "pid 4711" when said before.
std::string process_label(const JobSnapshot& job, const Deadlock::Member& m, bool again) {
  const ProcessSnapshot& p = job.processes[m.process];
  if (again) return member_name(p);
  const ThreadSnapshot* main = main_thread(p);
  const ThreadSnapshot* t = thread_by_tid(p, m.tid);
  std::string at = t ? where_thread(*t) : "";
  std::string name = main ? main->name : "";
  if (!name.empty() && !at.empty()) name += ", ";
  name += at;
  return name.empty() ? member_name(p) : fmt::format("{} ({})", member_name(p), name);
}

std::string process_step(const JobSnapshot& job, const Deadlock& d, std::size_t k) {
  const Deadlock::Member& to = d.members[(k + 1) % d.members.size()];
  std::string target = process_label(job, to, to.process == d.members.front().process);
  const std::string& via = d.via[k]->via;
  if (starts_with(via, "child ")) return fmt::format("waits for its child {} to exit", target);
  if (starts_with(via, "pipe:[")) {
    const ProcessSnapshot& from = job.processes[d.members[k].process];
    bool writing = writes(thread_by_tid(from, d.members[k].tid));
    return fmt::format("waits for {} to {} {}", target, writing ? "read" : "write to", via);
  }
  return fmt::format("waits on {} via {}", target, via);
}

std::string thread_step(const ProcessSnapshot& p, const Deadlock& d, std::size_t k) {
  int to = d.members[(k + 1) % d.members.size()].tid;
  bool closing = (k + 1) % d.members.size() == 0;
  std::string target = closing ? std::to_string(to) : "thread " + thread_label(p, to);
  const std::string& via = d.via[k]->via;
  // "waits for a mutex held by 4712, which waits for one held by 4711"
  for (std::string_view lock : {"mutex ", "RLock "}) {
    if (!starts_with(via, lock)) continue;
    bool again = k > 0 && starts_with(d.via[k - 1]->via, lock);
    std::string what = again ? "one" : lock == "mutex " ? "a mutex" : "an RLock";
    return fmt::format("waits for {} held by {}", what, target);
  }
  return fmt::format("waits on {} over {}", target, via);
}

}  // namespace

std::string thread_label(const ProcessSnapshot& p, int tid) {
  const ThreadSnapshot* t = thread_by_tid(p, tid);
  if (!t) return std::to_string(tid);
  std::string name = t->python_name.value_or(t->name);
  std::string at = where_thread(*t);
  if (!name.empty() && !at.empty()) name += ", ";
  name += at;
  return name.empty() ? std::to_string(tid) : fmt::format("{} ({})", tid, name);
}

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

std::string deadlock_sentence(const JobSnapshot& job, const Deadlock& d) {
  std::string out;
  if (d.kind == Deadlock::Kind::threads) {
    const ProcessSnapshot& p = job.processes[d.members.front().process];
    out = "thread " + thread_label(p, d.members.front().tid);
    for (std::size_t k = 0; k < d.members.size(); ++k)
      out += (k ? ", which " : " ") + thread_step(p, d, k);
    if (job.processes.size() > 1) out += " (in " + member_name(p) + ")";
    return out;
  }
  out = process_label(job, d.members.front(), false);
  for (std::size_t k = 0; k < d.members.size(); ++k)
    out += (k ? ", which " : " ") + process_step(job, d, k);
  return out;
}

}  // namespace hangscan
