// Pool roles: idle workers from their stacks, and the straggler rule.
#include "group/roles.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "group/analysis.h"
#include "group/stack_key.h"

namespace hangscan {

namespace {

// A pool's task loop and the call in it that waits for the next task. A worker whose innermost
// Python frames are the loop, or the wait called from the loop (whatever the wait calls in
// turn: the queue's lock, its pipe, a poll), has no task: it is idle.
struct WorkerLoop {
  std::string_view loop_file;  // suffix of the code object's file
  std::string_view loop_function;
  std::string_view wait_file;
  std::string_view wait_function;
};

constexpr std::array<WorkerLoop, 4> kWorkerLoops = {{
    // multiprocessing.Pool: worker() -> task = get() (SimpleQueue.get)
    {"multiprocessing/pool.py", "worker", "multiprocessing/queues.py", "get"},
    // concurrent.futures.ProcessPoolExecutor: _process_worker() -> call_queue.get(block=True)
    {"concurrent/futures/process.py", "_process_worker", "multiprocessing/queues.py", "get"},
    // torch.utils.data.DataLoader: _worker_loop() -> index_queue.get(timeout=...)
    {"torch/utils/data/_utils/worker.py", "_worker_loop", "multiprocessing/queues.py", "get"},
    // joblib's loky executor: _process_worker() -> call_queue.get(block=True, timeout=...)
    {"loky/process_executor.py", "_process_worker", "multiprocessing/queues.py", "get"},
}};

// Where an owner that waits for its workers is: the library that joins them or takes their
// results (Process.join, Pool.map, a future's result, a DataLoader's next batch).
constexpr std::array<std::string_view, 4> kOwnerWaits = {"multiprocessing/", "concurrent/futures/",
                                                         "torch/utils/data/", "/threading.py"};

// Files of the interpreter's library and of installed packages (pyenv, Debian, venvs).
constexpr std::array<std::string_view, 3> kLibraryDirs = {"/lib/python", "/lib64/python",
                                                          "/site-packages/"};

bool file_ends_with(const Frame& f, std::string_view suffix) {
  return f.file && std::string_view(*f.file).ends_with(suffix);
}

// The function of frame `f` in `file` is `name`: plain ("get", before 3.11) or qualified
// ("Queue.get", "SimpleQueue.get": 3.11's co_qualname).
bool is_function(const Frame& f, std::string_view file, std::string_view name) {
  std::string_view fn = f.function;
  bool same = fn == name || (fn.size() > name.size() && fn.ends_with(name) &&
                             fn[fn.size() - name.size() - 1] == '.');
  return same && file_ends_with(f, file);
}

// Where a forked worker's own work starts: a pool's loop, or multiprocessing's Process start.
bool worker_start(const Frame& f) {
  if (is_function(f, "multiprocessing/process.py", "_bootstrap")) return true;
  return std::any_of(kWorkerLoops.begin(), kWorkerLoops.end(), [&](const WorkerLoop& w) {
    return is_function(f, w.loop_file, w.loop_function);
  });
}

bool has_died(const ProcessSnapshot& p) {
  return p.death.has_value() || p.state == 'Z' || p.state == 'X' || main_state(p) == 'Z';
}

// The user's frame ("work (pool_hang.py:29)"), and the innermost frame when the user's frame
// called into the library ("produce (q.py:40) -> put (queues.py:94)"); empty when no user
// frame is on the main thread's stack.
std::vector<FrameRef> user_place(const ProcessSnapshot& p) {
  const ThreadSnapshot* m = main_thread(p);
  if (!m) return {};
  std::vector<const Frame*> py = python_frames(*m);
  // A forked child keeps its parent's outer frames: only frames inside its own start count.
  auto start = std::find_if(py.begin(), py.end(), [](const Frame* f) { return worker_start(*f); });
  auto user = std::find_if(py.begin(), start, [](const Frame* f) { return is_user_frame(*f); });
  if (user == start) return {};
  std::vector<FrameRef> out{FrameRef{.frame = *user}};
  if (user != py.begin()) out.push_back(FrameRef{.frame = py.front()});
  return out;
}

// The captured process `pid` on `host`, nullptr when it is not in the job.
const ProcessSnapshot* find_process(const JobSnapshot& job, const std::string& host, int pid) {
  for (const ProcessSnapshot& p : job.processes) {
    if (p.pid == pid && p.host == host) return &p;
  }
  return nullptr;
}

// multiprocessing's forkserver (a helper whose command line runs multiprocessing.forkserver):
// the processes it forks are its parent's workers.
bool is_forkserver(const ProcessSnapshot& p) {
  return p.role == "helper" &&
         std::any_of(p.cmdline.begin(), p.cmdline.end(), [](const std::string& arg) {
           return arg.find("multiprocessing.forkserver") != std::string::npos;
         });
}

// The pool owner of a worker: its parent, or the forkserver's parent for a worker the
// forkserver forked.
int pool_owner_pid(const JobSnapshot& job, const ProcessSnapshot& p) {
  const ProcessSnapshot* parent = find_process(job, p.host, p.ppid);
  return parent && is_forkserver(*parent) ? parent->ppid : p.ppid;
}

// The members of one owner's pool, by what they do.
struct Pool {
  std::optional<std::size_t> owner;  // index of the owner, when it was captured
  int owner_pid = 0;
  std::string host;
  std::vector<std::size_t> busy, idle, dead;
  bool helpers = false;  // forked workers of a rank (helpers): not grouped, never suspects
};

// A rank's forked worker (a DataLoader worker inherits RANK: a helper, proc/rank_info.h) whose
// stack shows where a forked worker starts: a member of its rank's pool.
bool forked_helper(const ProcessSnapshot& p) {
  const ThreadSnapshot* m = main_thread(p);
  if (p.role != "helper" || !m) return false;
  return std::any_of(m->frames.begin(), m->frames.end(),
                     [](const Frame& f) { return f.kind == FrameKind::python && worker_start(f); });
}

std::map<std::pair<std::string, int>, Pool> pools_of(const JobSnapshot& job) {
  std::map<std::pair<std::string, int>, Pool> pools;
  std::map<int, std::string> host_of;  // pid -> host of the process captured with that pid
  for (const ProcessSnapshot& p : job.processes) host_of.emplace(p.pid, p.host);
  for (std::size_t i = 0; i < job.processes.size(); ++i) {
    const ProcessSnapshot& p = job.processes[i];
    bool helper = forked_helper(p);
    if (p.role != kWorkerRole && p.role != kIdleRole && !helper) continue;
    int owner = pool_owner_pid(job, p);  // a scan of the job: only for pool members
    if (owner <= 0) continue;
    // A process that could not be opened (a zombie) has no host of its own: its owner's.
    std::string host = p.host;
    if (auto o = host_of.find(p.ppid); host.empty() && o != host_of.end()) host = o->second;
    Pool& pool = pools[{host, owner}];
    pool.owner_pid = owner;
    pool.host = host;
    pool.helpers = pool.helpers || helper;
    const ThreadSnapshot* m = main_thread(p);
    if (has_died(p)) pool.dead.push_back(i);
    else if (p.role == kIdleRole || (helper && m && in_idle_worker_loop(*m)))
      pool.idle.push_back(i);
    else pool.busy.push_back(i);
  }
  for (std::size_t i = 0; i < job.processes.size(); ++i) {
    const ProcessSnapshot& p = job.processes[i];
    auto it = pools.find({p.host, p.pid});
    if (it != pools.end()) it->second.owner = i;
  }
  return pools;
}

// The owner's innermost Python frame is in a library that waits for workers (kOwnerWaits).
bool owner_waits(const JobSnapshot& job, const Pool& pool) {
  if (!pool.owner) return false;
  const ThreadSnapshot* m = main_thread(job.processes[*pool.owner]);
  if (!m) return false;
  auto f = std::find_if(m->frames.begin(), m->frames.end(),
                        [](const Frame& x) { return x.kind == FrameKind::python && x.file; });
  return f != m->frames.end() &&
         std::any_of(kOwnerWaits.begin(), kOwnerWaits.end(),
                     [&](std::string_view lib) { return f->file->find(lib) != std::string::npos; });
}

// The busy workers in user code, when some of their siblings are idle or dead, or when one
// worker is the only one of an owner that waits for it (a parent in Process.join); empty
// otherwise (a pool where all are busy is grouped as peers).
std::vector<std::size_t> stragglers_of(const JobSnapshot& job, const Pool& pool) {
  std::size_t siblings = pool.idle.size() + pool.dead.size();
  bool alone = pool.busy.size() == 1 && siblings == 0 && owner_waits(job, pool);
  std::vector<std::size_t> out;
  if (pool.busy.empty() || (siblings == 0 && !alone)) return out;
  for (std::size_t m : pool.busy) {
    if (!user_place(job.processes[m]).empty()) out.push_back(m);
  }
  return out;
}

}  // namespace

bool in_pool_loop(const ThreadSnapshot& t) {
  return std::any_of(t.frames.begin(), t.frames.end(), [](const Frame& f) {
    return std::any_of(kWorkerLoops.begin(), kWorkerLoops.end(), [&](const WorkerLoop& w) {
      return is_function(f, w.loop_file, w.loop_function);
    });
  });
}

bool is_user_frame(const Frame& f) {
  if (f.kind != FrameKind::python || !f.file || f.file->empty()) return false;
  if (f.file->front() == '<') return false;  // <frozen ...>, <string>
  return std::none_of(kLibraryDirs.begin(), kLibraryDirs.end(),
                      [&](std::string_view dir) { return f.file->find(dir) != std::string::npos; });
}

bool in_idle_worker_loop(const ThreadSnapshot& t) {
  std::vector<const Frame*> py = python_frames(t);
  for (std::size_t i = 0; i < py.size(); ++i) {
    for (const WorkerLoop& w : kWorkerLoops) {
      if (!is_function(*py[i], w.loop_file, w.loop_function)) continue;
      if (i == 0) return true;  // between two tasks, in the loop itself
      if (!is_function(*py[i - 1], w.wait_file, w.wait_function))
        return false;  // a task runs inside the loop
      return std::none_of(py.begin(), py.begin() + static_cast<std::ptrdiff_t>(i),
                          [](const Frame* f) { return is_user_frame(*f); });
    }
  }
  return false;
}

void mark_started_workers(JobSnapshot& job) {
  std::set<std::pair<std::string, int>> owners;
  for (ProcessSnapshot& p : job.processes) {
    const ThreadSnapshot* m = main_thread(p);
    if (p.core || p.role != "rank" || p.rank || !m || !in_pool_loop(*m)) continue;
    p.role = kWorkerRole;
    owners.insert({p.host, pool_owner_pid(job, p)});
  }
  for (ProcessSnapshot& o : job.processes) {
    bool plain = o.role == "launcher" || o.role == "process";  // forkserver: a grandparent
    if (!plain || !owners.count({o.host, o.pid})) continue;
    // A parent of ranks too (a spawn launcher whose ranks run pools) stays their launcher.
    bool ranks = std::any_of(job.processes.begin(), job.processes.end(), [&](const auto& r) {
      return r.role == "rank" && r.host == o.host && r.ppid == o.pid;
    });
    if (!ranks) o.role = kOwnerRole;
  }
}

void mark_idle_workers(JobSnapshot& job) {
  for (ProcessSnapshot& p : job.processes) {
    const ThreadSnapshot* m = main_thread(p);
    if (p.role != kWorkerRole || !m || !in_idle_worker_loop(*m)) continue;
    // A worker stopped, dead or stuck in the kernel between two tasks is no idle worker: its
    // state is the story (it may hold the queue's lock; the owner waits for it to exit).
    char s = (p.state == 'Z' || p.state == 'X') ? p.state : m->state;
    if (s == 'T' || s == 't' || s == 'D' || s == 'Z' || s == 'X') continue;
    p.role = kIdleRole;
  }
}

bool is_worker_role(const std::string& role) { return role == kWorkerRole || role == kIdleRole; }

bool is_pool_role(const std::string& role) { return is_worker_role(role) || role == kOwnerRole; }

bool worker_findings(const JobSnapshot& job, Analysis& a, std::vector<std::size_t>& flagged) {
  std::vector<std::size_t> told;  // grouped members whose pool's verdict is given here
  for (const auto& [key, pool] : pools_of(job)) {
    if (pool.helpers) continue;  // a rank's workers: the rank's wait names them (below)
    std::vector<std::size_t> stragglers = stragglers_of(job, pool);
    if (stragglers.empty()) continue;
    bool alone = pool.busy.size() == 1 && pool.idle.empty() && pool.dead.empty();
    for (std::size_t m : stragglers) {
      Finding f{.kind = FindingKind::pool_straggler,
                .members = {m},
                .others = pool.dead,
                .frames = user_place(job.processes[m]),
                .host = pool.host,
                .flag = alone};
      f.owner = pool.owner;
      f.owner_pid = pool.owner_pid;
      f.idle = pool.idle.size();
      f.busy = pool.busy.size() - 1;
      a.findings.push_back(std::move(f));
      flagged.push_back(m);
    }
    told.insert(told.end(), pool.busy.begin(), pool.busy.end());
    told.insert(told.end(), pool.dead.begin(), pool.dead.end());
  }
  if (told.empty()) return false;
  std::vector<std::size_t> named = flagged;
  std::sort(named.begin(), named.end());
  for (Group& g : a.groups) {
    g.suspect = g.suspect || std::all_of(g.members.begin(), g.members.end(), [&](std::size_t m) {
                  return std::binary_search(named.begin(), named.end(), m);
                });
  }
  std::sort(told.begin(), told.end());
  return std::all_of(a.grouped.begin(), a.grouped.end(), [&](std::size_t m) {
    return std::binary_search(told.begin(), told.end(), m);
  });
}

std::vector<Finding> pool_wait_findings(const JobSnapshot& job, const Analysis& a) {
  std::vector<Finding> out;
  for (const auto& [key, pool] : pools_of(job)) {
    if (!pool.owner) continue;
    const ProcessSnapshot& owner = job.processes[*pool.owner];
    if (has_died(owner) || main_state(owner) == 'R') continue;
    std::vector<std::size_t> waited = stragglers_of(job, pool);
    std::erase_if(waited, [&a, helpers = pool.helpers](std::size_t m) {
      return !helpers && !a.is_suspect(m);  // a copy: clang 14 cannot capture a binding
    });
    if (waited.empty()) continue;
    Finding f{.kind = FindingKind::pool_wait, .members = {*pool.owner}, .others = waited};
    if (waited.size() == 1) f.frames = user_place(job.processes[waited[0]]);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace hangscan
