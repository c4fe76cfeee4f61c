#include "group/death_findings.h"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

#include "group/rank_set.h"
#include "group/stack_key.h"

namespace hangscan {

namespace {

std::string human(std::uint64_t bytes) {
  double v = static_cast<double>(bytes) / (1 << 20);
  if (v >= 1024) return fmt::format("{:.1f} GiB", v / 1024);
  return fmt::format("{:.0f} MiB", v);
}

bool dead(const ProcessSnapshot& p) { return p.state == 'Z' || p.state == 'X'; }

// Where the living majority waits (its deepest Python frame, else its innermost frame): the
// finding's `others` and `place`; none when no living group has a frame.
void living_majority(const JobSnapshot& job, const Analysis& a, Finding& f) {
  const Group* best = nullptr;
  for (const Group& g : a.groups) {
    bool living = std::none_of(g.members.begin(), g.members.end(),
                               [&](std::size_t m) { return dead(job.processes[m]); });
    if (living && (!best || g.members.size() > best->members.size())) best = &g;
  }
  if (!best || best->frames.empty()) return;
  std::vector<std::size_t> path = a.trie.path_to(best->node);  // outermost first
  std::size_t where = path.back();
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    if (a.trie.node(*it).frame.kind == FrameKind::python) {
      where = *it;
      break;
    }
  }
  f.others = best->members;
  f.place = FrameRef{.node = where};
}

}  // namespace

std::string clock_words(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string death_words(const Death& d) {
  std::string s;
  std::string when = d.at ? " at " + clock_words(*d.at) : std::string();
  if (d.how == "oom-kill") {
    s = "was killed by the kernel OOM killer" + when;
    std::vector<std::string> facts;
    if (!d.cgroup.empty()) facts.push_back("memory cgroup " + d.cgroup);
    if (d.limit_bytes) facts.push_back("limit " + human(*d.limit_bytes));
    if (d.rss_bytes) facts.push_back("rss " + human(*d.rss_bytes));
    if (!facts.empty()) {
      s += " (" + facts[0];
      for (std::size_t i = 1; i < facts.size(); ++i)
        s += (i == 1 && !d.cgroup.empty() ? ": " : ", ") + facts[i];
      s += ")";
    }
  } else if (d.how == "segfault") {
    s = "crashed" + when + ": " + (d.detail.empty() ? std::string("segfault") : d.detail);
  } else if (d.how == "killed") {
    s = fmt::format(
        "was killed by {}{}{}",
        d.signal_name.empty() ? fmt::format("signal {}", d.signal.value_or(0)) : d.signal_name,
        when, d.core_dumped ? " (core dumped)" : "");
    if (!d.detail.empty()) s += " (" + d.detail + ")";
  } else if (d.how == "exited") {
    s = fmt::format("exited with code {}{}", d.exit_code.value_or(0), when);
  } else if (d.how == "slurm") {
    s = "died";  // Slurm's record below is all that is known
  } else {
    s = "died" + when;
  }
  if (!d.slurm_step.empty()) {
    s += fmt::format("; Slurm: step {} {}", d.slurm_step, d.slurm_state);
    if (!d.slurm_exit_code.empty() && d.slurm_exit_code != "0:0")
      s += fmt::format(" (exit code {})", d.slurm_exit_code);
  }
  // A core file is named with the command that reads it; anything else (systemd-coredump, a
  // program in core_pattern, a pattern that cannot be expanded) is said as it is.
  if (d.core.empty()) return s;
  if (d.core.find(' ') == std::string::npos && d.core.find('\'') == std::string::npos) {
    s += "; read its core with: hangscan core " + d.core;
    if (d.core.front() != '/') s += " (in its working directory)";
  } else {
    s += "; its core went to " + d.core;
  }
  return s;
}

DeathFindings death_findings(const JobSnapshot& job, Analysis& a,
                             std::vector<std::size_t>& flagged) {
  DeathFindings out;
  const std::string* first_host = nullptr;
  bool multi_host = false;
  for (const ProcessSnapshot& p : job.processes) {
    if (p.host.empty()) continue;
    if (!first_host) first_host = &p.host;
    else if (p.host != *first_host) multi_host = true;
    if (multi_host) break;
  }
  std::vector<std::size_t> dead_unranked;
  std::vector<std::size_t> with_death;
  for (std::size_t m : a.grouped) {
    const ProcessSnapshot& p = job.processes[m];
    if (!p.death) continue;
    with_death.push_back(m);
    if (!p.rank) dead_unranked.push_back(m);
  }
  std::vector<int> missing = a.missing_ranks;
  // A zombie's environment is gone with its memory: it is the missing rank when it is the only
  // dead process without a rank and that the only missing rank.
  std::optional<int> zombie_rank;
  if (dead_unranked.size() == 1 && missing.size() == 1) zombie_rank = missing.front();
  for (std::size_t m : with_death) {
    const ProcessSnapshot& p = job.processes[m];
    Death d = *p.death;
    if (d.host.empty()) d.host = p.host;
    std::optional<int> rank = p.rank;
    if (!rank && zombie_rank) {
      rank = zombie_rank;
      out.ranks.insert(*rank);
    }
    Finding f{.kind = FindingKind::death, .members = {m}, .rank = rank};
    f.host = multi_host ? d.host : "";
    f.flag = rank.has_value();
    f.death = std::move(d);
    if (p.state == 'Z') f.zombie_of = p.ppid;
    living_majority(job, a, f);
    a.findings.push_back(std::move(f));
    out.members.insert(m);
    flagged.push_back(m);
  }
  for (Group& g : a.groups) {
    if (std::all_of(g.members.begin(), g.members.end(),
                    [&](std::size_t m) { return out.members.count(m) > 0; }))
      g.suspect = true;
  }
  // Reaped deaths from the kernel log: linked when one death meets one missing rank.
  std::vector<int> unexplained;
  for (int r : missing) {
    if (!out.ranks.count(r)) unexplained.push_back(r);
  }
  if (unexplained.empty()) return out;
  for (const Death& d : job.deaths) {
    std::optional<int> rank;
    if (job.deaths.size() == 1 && unexplained.size() == 1) rank = unexplained.front();
    Finding f{.kind = FindingKind::death, .rank = rank, .death = d};
    f.host = multi_host ? d.host : "";
    f.flag = rank.has_value();
    if (!rank) f.ranks = unexplained;
    else out.ranks.insert(*rank);
    living_majority(job, a, f);
    a.findings.push_back(std::move(f));
  }
  return out;
}

}  // namespace hangscan
