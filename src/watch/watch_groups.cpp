#include "watch/watch_groups.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "group/analysis.h"
#include "group/rank_set.h"
#include "group/roles.h"
#include "group/stack_key.h"
#include "report/finding_words.h"
#include "util/escape.h"

namespace hangscan {

namespace {

// The wait a process is stuck in: still going at the end and at least half the window long;
// the main thread's when it is stuck (its stack is the process's key, as in dump), else the
// longest (a helper thread's wait began a moment earlier than the main thread's, as a queue's
// feeder thread does).
const WaitView* stuck_wait(const ProcessWatch& p, double window_s) {
  const WaitView* best = nullptr;
  for (const auto& w : p.waits) {
    if (!w.ongoing || w.duration_s < window_s / 2) continue;
    bool main = w.tid == p.pid, best_main = best != nullptr && best->tid == p.pid;
    if (best == nullptr || (main && !best_main) ||
        (main == best_main && w.duration_s > best->duration_s))
      best = &w;
  }
  return best;
}

template <typename T>
std::vector<T> array_of(const nlohmann::json& j, const char* key) {
  std::vector<T> out;
  if (!j.contains(key) || !j[key].is_array()) return out;
  for (const auto& v : j[key]) {
    if constexpr (std::is_same_v<T, int>) {
      if (v.is_number_integer()) out.push_back(v.get<int>());
    } else {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  }
  return out;
}

std::string members(const WatchGroup& g) {
  std::string s;
  if (!g.ranks.empty())
    s = fmt::format("{} {}", g.ranks.size() == 1 ? "rank" : "ranks", RankSet(g.ranks).to_string());
  else s = fmt::format("{} {}", g.pids.size() == 1 ? "pid" : "pids", fmt::join(g.pids, ","));
  if (g.hosts.size() == 1) s += " on " + g.hosts[0];
  if (g.hosts.size() > 1) s += fmt::format(" on {} nodes", g.hosts.size());
  return s;
}

// The member's key as the thread's frames: its behaviour's names, innermost first. With
// `places`, a stuck wait's Python frames keep their file and line, so a pool's verdict can say
// where its straggler is (ranks keep names only: their sentences are as they were).
void key_frames_of(const BehaviourMember& m, bool places, ThreadSnapshot& t) {
  const std::vector<Frame>& real = m.behaviour.frames;
  for (std::size_t i = 0; i < m.behaviour.key.size(); ++i) {
    Frame& f = t.frames.emplace_back();
    f.function = m.behaviour.key[i];
    if (places && i < real.size() && real[i].kind == FrameKind::python &&
        real[i].function == f.function) {
      f.kind = FrameKind::python;
      f.file = real[i].file;
      f.line = real[i].line;
    }
  }
}

// A pool member stuck in the program's own code, as a sentence: "slept in work (pool.py:11)
// for the whole window (clock_nanosleep() for 5.4 s)"; "" when no user frame is at the wait (an
// idle worker, the owner: their wait is the library's).
std::string pool_member_wait(const WaitView& w) {
  auto user = std::find_if(w.frames.begin(), w.frames.end(), is_user_frame);
  if (user == w.frames.end()) return "";
  bool sleep = w.syscall == "clock_nanosleep" || w.syscall == "nanosleep";
  std::string call = w.syscall.empty() ? "off CPU" : w.syscall + "()";
  std::string what = fmt::format("{} in {}", sleep ? "slept" : "waited", short_frame_label(*user));
  if (w.before_window)
    return fmt::format("{} for the whole window ({} for {:.1f} s)", what, call, w.duration_s);
  return fmt::format("{} for {:.1f} s ({})", what, w.duration_s, call);
}

}  // namespace

Behaviour behaviour_of(const ProcessWatch& p, double window_s) {
  Behaviour b;
  if (p.exit) {
    b.what = *p.exit;  // "exited with status 3", "killed by SIGKILL", "ended (...)"
    b.key.push_back("(" + b.what + ")");
    b.state = 'X';
    return b;
  }
  if (const WaitView* w = stuck_wait(p, window_s)) {
    std::string call = w->syscall.empty() ? "off CPU outside a system call" : w->syscall + "()";
    b.what = is_pool_role(p.role) ? pool_member_wait(*w) : "";
    if (b.what.empty())
      b.what = fmt::format("stuck in {} ({:.1f} s{})", call, w->duration_s,
                           w->before_window ? ", since before the window" : "");
    b.state = 'S';
    b.frames = w->frames;
    if (!w->frames.empty()) {
      for (const auto& f : w->frames) b.key.push_back(f.function);
    } else {
      for (const auto& k : w->kernel) b.key.push_back("[kernel] " + k.substr(0, k.find('+')));
    }
    b.key.push_back("(stuck in " + call + ")");
    return b;
  }
  b.what = fmt::format("active (on CPU {:.0f}%, {} waits ended)", p.cpu_share * 100, p.wait_count);
  b.key.push_back("(active in the window)");
  b.state = 'R';
  return b;
}

WatchVerdict group_behaviours(const std::vector<BehaviourMember>& members) {
  JobSnapshot job;
  for (const auto& m : members) {
    ProcessSnapshot s;
    s.pid = m.pid;
    s.ppid = m.ppid;
    s.rank = m.rank;
    s.role = m.role;
    s.host = m.host;
    ThreadSnapshot t;
    t.tid = m.pid;
    t.is_main = true;
    // A pool's members are told apart by what they did and where (group/roles.h): ended ones
    // are dead; a stuck one's Python frames say its function and line.
    bool pool = is_pool_role(m.role);
    key_frames_of(m, pool, t);
    if (pool) s.state = t.state = m.behaviour.state;
    s.threads.push_back(std::move(t));
    job.processes.push_back(std::move(s));
  }
  WatchVerdict v;
  Analysis a = analyze(job, GroupOptions{});
  if (a.grouped.size() < 2 && a.findings.empty()) return v;  // a pool: one straggler
  for (const Group& g : a.groups) {
    WatchGroup wg;
    wg.ranks = g.ranks;
    wg.pids = g.pids;
    if (g.hosts.size() > 1 || (g.hosts.size() == 1 && !g.hosts[0].empty())) wg.hosts = g.hosts;
    wg.suspect = g.suspect;
    wg.what = members[g.members.front()].behaviour.what;
    v.groups.push_back(std::move(wg));
  }
  v.suspects = a.suspects;
  VerdictWords words = verdict_words(job, a);  // report/finding_words.h
  v.suspect_reasons = std::move(words.suspect_reasons);
  v.notes = std::move(words.wait_chains);  // an owner that waits for its straggler
  for (std::size_t i = 0; i < a.note_findings.size(); ++i) {
    const Finding& f = a.note_findings[i];
    // The verdict's words are a snapshot's; here the key is a behaviour, not a stack.
    if (f.kind == FindingKind::same_stack) {
      v.notes.push_back(fmt::format("all {} {} did the same in the window", f.count,
                                    f.flag ? "ranks" : "processes"));
    } else {
      v.notes.push_back(std::move(words.notes[i]));
    }
  }
  return v;
}

// Pool workers started by spawn (ranks of unknown number by their command line) whose wait is
// in a pool's task loop are workers, and their parent their owner, as mark_started_workers()
// decides for dump (group/roles.h).
static void mark_started_watch_workers(WatchReport& r) {
  std::set<int> owners;
  for (auto& p : r.processes) {
    ThreadSnapshot waiting;
    waiting.frames = p.behaviour.frames;
    if (p.role != "rank" || p.rank || !in_pool_loop(waiting)) continue;
    p.role = kWorkerRole;
    owners.insert(p.ppid);
  }
  for (auto& o : r.processes) {
    bool ranks = std::any_of(r.processes.begin(), r.processes.end(),
                             [&](const auto& c) { return c.role == "rank" && c.ppid == o.pid; });
    if (owners.count(o.pid) && (o.role == "launcher" || o.role == "process") && !ranks)
      o.role = kOwnerRole;
  }
}

void group_watched(WatchReport& r) {
  std::vector<BehaviourMember> members;
  // Behaviours first: their frames tell started workers; then again, in a pool's words.
  for (auto& p : r.processes) p.behaviour = behaviour_of(p, r.window_s);
  mark_started_watch_workers(r);
  for (auto& p : r.processes) {
    p.behaviour = behaviour_of(p, r.window_s);
    if (p.role == kWorkerRole) {
      ThreadSnapshot waiting;
      waiting.frames = p.behaviour.frames;
      if (in_idle_worker_loop(waiting)) p.role = kIdleRole;
    }
    members.push_back({p.pid, p.ppid, p.rank, p.role, "", p.behaviour});
  }
  r.verdict = group_behaviours(members);
}

void verdict_into_json(const WatchVerdict& v, nlohmann::json& j) {
  j["groups"] = nlohmann::json::array();
  for (const auto& g : v.groups) {
    nlohmann::json gj{
        {"ranks", g.ranks}, {"pids", g.pids}, {"what", g.what}, {"suspect", g.suspect}};
    if (!g.hosts.empty()) gj["nodes"] = g.hosts;
    j["groups"].push_back(std::move(gj));
  }
  j["suspects"] = v.suspects;
  j["suspect_reasons"] = v.suspect_reasons;
  j["group_notes"] = v.notes;
}

WatchVerdict verdict_from_json(const nlohmann::json& j) {
  WatchVerdict v;
  if (j.contains("groups") && j["groups"].is_array()) {
    for (const auto& gj : j["groups"]) {
      if (!gj.is_object()) continue;
      WatchGroup& g = v.groups.emplace_back();
      g.ranks = array_of<int>(gj, "ranks");
      g.pids = array_of<int>(gj, "pids");
      g.hosts = array_of<std::string>(gj, "nodes");
      g.what = gj.value("what", std::string());
      g.suspect = gj.value("suspect", false);
    }
  }
  v.suspects = array_of<int>(j, "suspects");
  v.suspect_reasons = array_of<std::string>(j, "suspect_reasons");
  v.notes = array_of<std::string>(j, "group_notes");
  return v;
}

std::string verdict_text(const WatchVerdict& v) {
  if (v.groups.empty()) return "";
  std::string out = "groups (by what each did in the window):\n";
  for (const auto& g : v.groups)
    out += fmt::format("  {}{}: {}\n", g.suspect ? "* " : "", escape_for_text(members(g)),
                       escape_for_text(g.what));
  for (const auto& s : v.suspect_reasons) out += fmt::format("  suspect: {}\n", escape_for_text(s));
  for (const auto& n : v.notes) out += fmt::format("  note: {}\n", escape_for_text(n));
  return out;
}

}  // namespace hangscan
