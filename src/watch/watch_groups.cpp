#include "watch/watch_groups.h"

#include <fmt/format.h>

#include "group/analysis.h"

namespace hangscan {

namespace {

Frame named(std::string function) {
  Frame f;
  f.function = std::move(function);
  return f;
}

// The wait a process is stuck in: still going at the end and at least half the window long.
const WaitView* stuck_wait(const ProcessWatch& p, double window_s) {
  const WaitView* best = nullptr;
  for (const auto& w : p.waits) {
    if (!w.ongoing || w.duration_s < window_s / 2) continue;
    if (best == nullptr || w.duration_s > best->duration_s) best = &w;
  }
  return best;
}

// The key of one process, innermost first; its outermost frame says the class, so ranks of
// different classes part at the root.
std::vector<Frame> behaviour_key(const ProcessWatch& p, double window_s, std::string& what) {
  std::vector<Frame> key;
  if (p.exit) {
    what = "ended: " + *p.exit;
    key.push_back(named("(" + what + ")"));
    return key;
  }
  if (const WaitView* w = stuck_wait(p, window_s)) {
    std::string call = w->syscall.empty() ? "off CPU outside a system call" : w->syscall + "()";
    what = fmt::format("stuck in {} ({:.1f} s{})", call, w->duration_s,
                       w->before_window ? ", since before the window" : "");
    if (!w->frames.empty()) {
      key = w->frames;
    } else {
      for (const auto& k : w->kernel) key.push_back(named("[kernel] " + k.substr(0, k.find('+'))));
    }
    key.push_back(named("(stuck in " + call + ")"));
    return key;
  }
  what = fmt::format("active (on CPU {:.0f}%, {} waits ended)", p.cpu_share * 100, p.wait_count);
  key.push_back(named("(active in the window)"));
  return key;
}

}  // namespace

void group_watched(WatchReport& r) {
  JobSnapshot job;
  std::vector<std::string> whats;
  for (const auto& p : r.processes) {
    ProcessSnapshot s;
    s.pid = p.pid;
    s.rank = p.rank;
    s.role = p.role;
    ThreadSnapshot t;
    t.tid = p.pid;
    t.is_main = true;
    t.frames = behaviour_key(p, r.window_s, whats.emplace_back());
    s.threads.push_back(std::move(t));
    job.processes.push_back(std::move(s));
  }
  GroupOptions options;
  Analysis a = analyze(job, options);
  if (a.grouped.size() < 2) return;
  for (const Group& g : a.groups) {
    WatchGroup wg;
    wg.ranks = g.ranks;
    wg.pids = g.pids;
    wg.suspect = g.suspect;
    wg.what = whats[g.members.front()];
    r.groups.push_back(std::move(wg));
  }
  r.suspects = a.suspects;
  r.suspect_reasons = a.suspect_reasons;
  r.group_notes = a.notes;
}

}  // namespace hangscan
