#include "watch/watch_groups.h"

#include <algorithm>
#include <array>
#include <set>

#include "group/analysis.h"
#include "group/roles.h"
#include "report/json_writer.h"
#include "watch/watch_words.h"

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

double number_of(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0;
}

constexpr std::array<std::pair<BehaviourKind, const char*>, 4> kKindNames{{
    {BehaviourKind::active, "active"},
    {BehaviourKind::stuck, "stuck"},
    {BehaviourKind::pool_wait, "pool_wait"},
    {BehaviourKind::ended, "ended"},
}};

const char* behaviour_kind_name(BehaviourKind k) {
  for (const auto& [kind, name] : kKindNames)
    if (kind == k) return name;
  return "active";
}

std::optional<BehaviourKind> behaviour_kind_of(const std::string& name) {
  for (const auto& [kind, n] : kKindNames)
    if (name == n) return kind;
  return std::nullopt;
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

// A pool member's frame in the program's own code at its wait; none for an idle worker or the
// owner (their wait is the library's).
std::optional<Frame> pool_user_frame(const WaitView& w) {
  auto user = std::find_if(w.frames.begin(), w.frames.end(), is_user_frame);
  if (user == w.frames.end()) return std::nullopt;
  return *user;
}

}  // namespace

Behaviour behaviour_of(const ProcessWatch& p, double window_s) {
  Behaviour b;
  if (p.exit) {
    b.kind = BehaviourKind::ended;
    b.exit = *p.exit;
    b.key.push_back("(" + exit_words(b.exit) + ")");  // "(killed by SIGKILL)"
    b.state = 'X';
    return b;
  }
  if (const WaitView* w = stuck_wait(p, window_s)) {
    b.kind = BehaviourKind::stuck;
    b.syscall = w->syscall;
    b.wait_s = w->duration_s;
    b.before_window = w->before_window;
    if (is_pool_role(p.role)) b.user_frame = pool_user_frame(*w);
    if (b.user_frame) b.kind = BehaviourKind::pool_wait;
    b.state = 'S';
    b.frames = w->frames;
    if (!w->frames.empty()) {
      for (const auto& f : w->frames) b.key.push_back(f.function);
    } else {
      for (const auto& k : w->kernel) b.key.push_back("[kernel] " + k.substr(0, k.find('+')));
    }
    std::string call = w->syscall.empty() ? "off CPU outside a system call" : w->syscall + "()";
    b.key.push_back("(stuck in " + call + ")");
    return b;
  }
  b.cpu_share = p.cpu_share;
  b.wait_count = p.wait_count;
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
  auto basis = std::make_shared<VerdictBasis>();
  basis->job = std::move(job);  // before analyze(): the findings point into it
  basis->analysis = analyze(basis->job, GroupOptions{});
  const Analysis& a = basis->analysis;
  if (a.grouped.size() < 2 && a.findings.empty()) return v;  // a pool: one straggler
  for (const Group& g : a.groups) {
    WatchGroup wg;
    wg.ranks = g.ranks;
    wg.pids = g.pids;
    if (g.hosts.size() > 1 || (g.hosts.size() == 1 && !g.hosts[0].empty())) wg.hosts = g.hosts;
    wg.suspect = g.suspect;
    wg.behaviour = members[g.members.front()].behaviour;
    wg.behaviour.key.clear();
    wg.behaviour.frames.clear();
    v.groups.push_back(std::move(wg));
  }
  v.suspects = a.suspects;
  v.basis = std::move(basis);
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

nlohmann::json behaviour_to_json(const Behaviour& b) {
  nlohmann::json j{{"kind", behaviour_kind_name(b.kind)}, {"key", b.key}};
  if (b.kind == BehaviourKind::stuck || b.kind == BehaviourKind::pool_wait) {
    j["syscall"] = b.syscall.empty() ? nlohmann::json(nullptr) : nlohmann::json(b.syscall);
    j["wait_s"] = b.wait_s;
    j["before_window"] = b.before_window;
  }
  if (b.user_frame) j["frame"] = frame_to_json(*b.user_frame);
  if (b.kind == BehaviourKind::active) {
    j["cpu_share"] = b.cpu_share;
    j["wait_count"] = b.wait_count;
  }
  if (b.kind == BehaviourKind::ended) {
    j["exit"] = exit_words(b.exit);
    j["exit_data"] = exit_to_json(b.exit);
  }
  return j;
}

std::optional<Behaviour> behaviour_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("key") || !j["key"].is_array()) return std::nullopt;
  auto kind = behaviour_kind_of(j.value("kind", std::string()));
  if (!kind) return std::nullopt;
  Behaviour b;
  b.kind = *kind;
  for (const auto& k : j["key"])
    if (k.is_string()) b.key.push_back(k.get<std::string>());
  if (j.contains("syscall") && j["syscall"].is_string()) b.syscall = j["syscall"];
  b.wait_s = number_of(j, "wait_s");
  b.before_window = j.value("before_window", false);
  if (j.contains("frame") && j["frame"].is_object()) {
    const nlohmann::json& fj = j["frame"];
    Frame& f = b.user_frame.emplace();
    f.kind = FrameKind::python;
    f.function = fj.value("function", std::string());
    if (fj.contains("file") && fj["file"].is_string()) f.file = fj["file"].get<std::string>();
    if (fj.contains("line") && fj["line"].is_number_integer()) f.line = fj["line"].get<int>();
  }
  b.cpu_share = number_of(j, "cpu_share");
  if (j.contains("wait_count") && j["wait_count"].is_number_unsigned())
    b.wait_count = j["wait_count"].get<std::uint64_t>();
  if (b.kind == BehaviourKind::ended) {
    // Its words are made from the data: an ended one without it is not grouped.
    auto exit = j.contains("exit_data") ? exit_from_json(j["exit_data"]) : std::nullopt;
    if (!exit) return std::nullopt;
    b.exit = *exit;
  }
  b.state = b.kind == BehaviourKind::ended ? 'X' : b.kind == BehaviourKind::active ? 'R' : 'S';
  return b;
}

}  // namespace hangscan
