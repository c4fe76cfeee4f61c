// Members, deaths, waiting times and deadlock cycles in words.
#include "report/member_words.h"

#include <ctime>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "group/rank_set.h"
#include "group/stack_key.h"

namespace hangscan {

namespace {

constexpr std::size_t kListLimit = 8;

std::string host_pid(const ProcessSnapshot& p) {
  return p.host.empty() ? fmt::format("{}", p.pid) : fmt::format("{}:{}", p.host, p.pid);
}

// Ranks of the ranked members, and names of the others (host:pid; "pid N" in words when no host).
void split_members(const JobSnapshot& job, const std::vector<std::size_t>& members, bool words,
                   std::vector<int>& ranks, std::vector<std::string>& others) {
  for (std::size_t m : members) {
    const ProcessSnapshot& p = job.processes[m];
    if (p.rank) {
      ranks.push_back(*p.rank);
    } else {
      others.push_back(words && p.host.empty() ? fmt::format("pid {}", p.pid) : host_pid(p));
    }
  }
}

std::string human(std::uint64_t bytes) {
  double v = static_cast<double>(bytes) / (1 << 20);
  if (v >= 1024) return fmt::format("{:.1f} GiB", v / 1024);
  return fmt::format("{:.0f} MiB", v);
}

// A deadlock's cycle (deadlock_sentence below).

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

std::string member_name(const ProcessSnapshot& p) {
  if (p.rank) return fmt::format("rank {}", *p.rank);
  if (p.host.empty()) return fmt::format("pid {}", p.pid);
  return fmt::format("{}:{}", p.host, p.pid);
}

std::string describe_members(const JobSnapshot& job, const std::vector<std::size_t>& members) {
  std::vector<int> ranks;
  std::vector<std::string> others;
  split_members(job, members, true, ranks, others);
  if (others.empty()) {
    RankSet set(ranks);
    return fmt::format("{} {}", set.size() == 1 ? "rank" : "ranks", set.to_string());
  }
  if (ranks.empty() && others.size() == 1) {
    return job.processes[members.front()].host.empty() ? others.front()
                                                       : fmt::format("process {}", others.front());
  }
  std::string out;
  if (!ranks.empty()) out = fmt::format("ranks {} and ", RankSet(ranks).to_string());
  if (others.size() > kListLimit) return out + fmt::format("{} processes", others.size());
  out += "processes ";
  for (std::size_t i = 0; i < others.size(); ++i) {
    if (i) out += ',';
    out += others[i];
  }
  return out;
}

std::string member_set_label(const JobSnapshot& job, const std::vector<std::size_t>& members) {
  std::vector<int> ranks;
  std::vector<std::string> others;
  split_members(job, members, false, ranks, others);
  std::string out = compress_ranges(RankSet(std::move(ranks)).values());
  if (others.size() > kListLimit) {
    if (!out.empty()) out += ',';
    return out + fmt::format("{} processes", others.size());
  }
  for (const std::string& o : others) {
    if (!out.empty()) out += ',';
    out += o;
  }
  return out;
}

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

std::string seconds_words(double s) {
  if (s < 100) return fmt::format("{:.1f} s", s);
  std::string out = fmt::format("{:.0f} s", s);
  if (s >= 3600) {
    auto total_min = static_cast<long long>(s / 60);
    out += fmt::format(" ({} h {} min)", total_min / 60, total_min % 60);
  }
  return out;
}

std::string wait_sentence(const JobSnapshot& job, const Group& g, const WaitSpread& w) {
  std::string where =
      g.frames.empty() ? std::string("(no stack)") : short_frame_label(g.frames.front());
  std::string blocked = fmt::format("{:.1f}", w.shortest_s) == fmt::format("{:.1f}", w.longest_s)
                            ? seconds_words(w.longest_s)
                            : fmt::format("{:.1f}-{}", w.shortest_s, seconds_words(w.longest_s));
  // Below the clocks' resolution (and the capture's own duration) an order means nothing.
  std::string arrival = w.spread_s() < kSameArrival_s
                            ? fmt::format("arrived within {:.1f} s of each other", kSameArrival_s)
                            : fmt::format("arrived over {}, {} last", seconds_words(w.spread_s()),
                                          member_name(job.processes[w.last]));
  std::string s = fmt::format("{} in {}: blocked {}, {}", describe_members(job, g.members), where,
                              blocked, arrival);
  if (w.hosts > 1)
    s += fmt::format(" (across {} hosts: the spread includes their clocks' skew)", w.hosts);
  return s;
}

std::string thread_label(const ProcessSnapshot& p, int tid) {
  const ThreadSnapshot* t = thread_by_tid(p, tid);
  if (!t) return std::to_string(tid);
  std::string name = t->python_name.value_or(t->name);
  std::string at = where_thread(*t);
  if (!name.empty() && !at.empty()) name += ", ";
  name += at;
  return name.empty() ? std::to_string(tid) : fmt::format("{} ({})", tid, name);
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
