#include "discovery/discovery.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "discovery/environ_memory.h"
#include "proc/proc_files.h"
#include "proc/process_tree.h"
#include "target/live_target.h"
#include "util/diagnostic.h"
#include "util/hints.h"

namespace hangscan {

namespace {

Diagnostic skipped(Diagnostic::Severity sev, int pid, std::string message, std::string hint = {}) {
  return make_diagnostic(sev, std::move(message), std::move(hint), pid);
}

// Collects the selection in order, without duplicates, leaving out what cannot or must not
// be captured.
class Selection {
 public:
  Selection(const ProcessTree& tree, int self, std::vector<Diagnostic>& diags)
      : tree_(tree), self_(self), diags_(diags) {
    auto below_self = tree_.descendants(self_);
    hangscan_.insert(below_self.begin(), below_self.end());
    hangscan_.insert(self_);
  }

  // `explicit_pid`: the user named it, so leaving it out deserves a diagnostic.
  void add(int pid, bool explicit_pid) {
    const ProcessEntry* e = tree_.find(pid);
    if (e == nullptr) {
      if (explicit_pid)
        diags_.push_back(skipped(Diagnostic::Severity::error, pid,
                                 fmt::format("pid {}: no such process", pid), hints::check_pid()));
      return;
    }
    if (e->kernel_thread) {
      diags_.push_back(
          skipped(Diagnostic::Severity::info, pid,
                  fmt::format("pid {} ({}) is a kernel thread: skipped", pid, e->comm)));
      return;
    }
    if (hangscan_.count(pid) != 0) {
      if (explicit_pid || pid == self_)
        diags_.push_back(skipped(Diagnostic::Severity::info, pid,
                                 fmt::format("pid {} is hangscan itself: skipped", pid)));
      return;
    }
    if (seen_.insert(pid).second) pids_.push_back(pid);
  }

  const std::vector<int>& pids() const { return pids_; }

 private:
  const ProcessTree& tree_;
  int self_;
  std::vector<Diagnostic>& diags_;
  std::set<int> hangscan_;
  std::set<int> seen_;
  std::vector<int> pids_;
};

// torch.multiprocessing.spawn starts its ranks exactly like multiprocessing's spawn does; the
// difference is that the launcher has libtorch loaded. Naming it saves the reader a guess.
void name_torch_spawn_launchers(const std::vector<ProcessFacts>& facts,
                                std::vector<RoleDecision>& roles, const std::string& proc_root) {
  constexpr std::string_view kSpawn = "multiprocessing.spawn";
  std::set<int> torch_launchers;
  for (std::size_t i = 0; i < facts.size(); ++i) {
    if (roles[i].role != kRoleLauncher || roles[i].launcher != kSpawn) continue;
    auto maps = read_text_file(fmt::format("{}/{}/maps", proc_root, facts[i].pid), 1 << 24);
    if (maps && maps->find("/libtorch") != std::string::npos) torch_launchers.insert(facts[i].pid);
  }
  if (torch_launchers.empty()) return;
  std::map<int, int> parent;
  for (const auto& f : facts) parent[f.pid] = f.ppid;
  for (std::size_t i = 0; i < facts.size(); ++i) {
    if (roles[i].launcher != kSpawn) continue;
    // The nearest spawn launcher at or above this process decides.
    int pid = facts[i].pid;
    for (std::size_t hops = 0; hops <= facts.size(); ++hops) {
      if (torch_launchers.count(pid) != 0) {
        roles[i].launcher = "torch.multiprocessing.spawn";
        break;
      }
      auto it = parent.find(pid);
      if (it == parent.end()) break;
      pid = it->second;
    }
  }
}

}  // namespace

std::vector<std::string> live_environment(int pid) {
  auto target = open_live_target(pid, true);  // only memory is read
  if (target) return read_environment(**target);
  return process_environ_file(pid);
}

Result<std::vector<DiscoveredProcess>> discover(const DiscoveryOptions& options,
                                                std::vector<Diagnostic>* diagnostics) {
  std::vector<Diagnostic> local_diags;
  std::vector<Diagnostic>& diags = diagnostics != nullptr ? *diagnostics : local_diags;
  const int self = options.self_pid != 0 ? options.self_pid : static_cast<int>(::getpid());
  const bool live = options.proc_root == "/proc";
  ProcessTree tree = ProcessTree::scan(options.proc_root);

  Selection sel(tree, self, diags);
  for (int pid : options.pids) {
    sel.add(pid, true);
    if (!options.subprocesses) continue;
    for (int child : tree.descendants(pid)) sel.add(child, false);
  }
  if (!options.match.empty()) {
    std::vector<int> exclude = tree.ancestors(self);
    exclude.push_back(self);
    auto matched = match_processes(tree, options.match, exclude, options.proc_root);
    if (!matched) return matched.error();
    if (matched->empty())
      diags.push_back(skipped(Diagnostic::Severity::warning, 0,
                              fmt::format("no process matches '{}'", options.match)));
    for (int pid : *matched) sel.add(pid, false);
  }
  if (sel.pids().empty()) {
    return Error(
        Errc::not_found, "no process to capture", 0,
        options.match.empty() ? hints::check_pid() : "check the pattern with 'pgrep -af PATTERN'");
  }

  // Facts for the selection plus its ancestors: a rank's launcher is often not selected
  // (`--match train.py`) but still says what the rank is.
  std::vector<ProcessFacts> facts;
  std::set<int> in_facts;
  std::map<int, std::size_t> selected_index;
  auto add_facts = [&](int pid, bool selected) {
    if (!in_facts.insert(pid).second) return;
    const ProcessEntry* e = tree.find(pid);
    if (e == nullptr) return;
    ProcessFacts f;
    f.pid = pid;
    f.ppid = e->ppid;
    f.comm = e->comm;
    f.cmdline = process_cmdline(pid, options.proc_root);
    f.environment =
        selected && live ? live_environment(pid) : process_environ_file(pid, options.proc_root);
    if (selected) selected_index[pid] = facts.size();
    facts.push_back(std::move(f));
  };
  for (int pid : sel.pids()) add_facts(pid, true);
  for (int pid : sel.pids())
    for (int a : tree.ancestors(pid))
      if (a > 1) add_facts(a, false);

  auto roles = assign_roles(facts);
  name_torch_spawn_launchers(facts, roles, options.proc_root);
  std::vector<DiscoveredProcess> out;
  for (auto [pid, i] : selected_index) {
    DiscoveredProcess d;
    d.pid = pid;
    d.ppid = facts[i].ppid;
    d.role = roles[i].role;
    d.launcher = roles[i].launcher;
    d.rank = roles[i].rank.rank;
    d.local_rank = roles[i].rank.local_rank;
    d.world_size = roles[i].rank.world_size;
    d.owner = roles[i].owner;
    d.reason = roles[i].reason;
    d.environment = std::move(facts[i].environment);
    out.push_back(std::move(d));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const DiscoveredProcess& a, const DiscoveredProcess& b) {
                     bool ra = a.rank.has_value(), rb = b.rank.has_value();
                     if (ra != rb) return ra;
                     if (ra && *a.rank != *b.rank) return *a.rank < *b.rank;
                     return a.pid < b.pid;
                   });
  return out;
}

void apply_rank_info(ProcessSnapshot& p, const std::vector<std::string>& env,
                     const DiscoveredProcess* discovered) {
  RankInfo info = rank_from_environment(env);
  p.rank.reset();
  p.world_size.reset();
  p.local_rank.reset();
  if (discovered != nullptr) {
    p.role = discovered->role;
    p.launcher = discovered->launcher;
    // A forked worker that exported a rank since discovery read its environment is a rank.
    if ((p.role == kRoleProcess || p.role == kRoleWorker) && info.has_rank()) p.role = kRoleRank;
    if (p.role == kRoleRank) {
      p.rank = info.rank ? info.rank : discovered->rank;
      p.world_size = info.world_size ? info.world_size : discovered->world_size;
      p.local_rank = info.local_rank ? info.local_rank : discovered->local_rank;
    }
  } else {
    CmdlineClass cls = classify_cmdline(p.cmdline);
    p.launcher.clear();
    if (cls.kind == CmdlineKind::launcher) {
      p.role = kRoleLauncher;
      p.launcher = cls.launcher;
    } else if (cls.kind == CmdlineKind::helper) {
      p.role = kRoleHelper;
    } else if (info.has_rank()) {
      p.role = kRoleRank;
      p.rank = info.rank;
      p.world_size = info.world_size;
      p.local_rank = info.local_rank;
    } else {
      p.role = kRoleProcess;
    }
  }
  if (p.launcher.empty() && p.role != kRoleProcess) p.launcher = info.launcher;
}

ProcessSnapshot unopened_snapshot(const DiscoveredProcess& dp, const Error& e) {
  ProcessSnapshot p;
  p.pid = dp.pid;
  p.ppid = dp.ppid;
  p.role = dp.role;
  p.launcher = dp.launcher;
  p.rank = dp.rank;
  p.world_size = dp.world_size;
  p.local_rank = dp.local_rank;
  p.state = e.code == Errc::zombie ? 'Z' : e.code == Errc::no_such_process ? 'X' : '?';
  p.diagnostics.push_back(error_diagnostic(e, dp.pid));
  return p;
}

}  // namespace hangscan
