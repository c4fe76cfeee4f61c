#include "watch/watch_words.h"

#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "group/rank_set.h"
#include "group/stack_key.h"
#include "report/finding_json.h"
#include "report/finding_words.h"
#include "util/escape.h"
#include "watch/watch_groups.h"

namespace hangscan {

namespace {

// A group's line: its members and what they did, in words.
struct GroupLine {
  std::vector<int> ranks;
  std::vector<int> pids;
  std::vector<std::string> hosts;
  std::string what;
  bool suspect = false;
};

std::string members(const GroupLine& g) {
  std::string s;
  if (!g.ranks.empty())
    s = fmt::format("{} {}", g.ranks.size() == 1 ? "rank" : "ranks", RankSet(g.ranks).to_string());
  else s = fmt::format("{} {}", g.pids.size() == 1 ? "pid" : "pids", fmt::join(g.pids, ","));
  if (g.hosts.size() == 1) s += " on " + g.hosts[0];
  if (g.hosts.size() > 1) s += fmt::format(" on {} nodes", g.hosts.size());
  return s;
}

std::string lines(const std::vector<GroupLine>& groups, const WatchVerdictWords& words) {
  if (groups.empty()) return "";
  std::string out = "groups (by what each did in the window):\n";
  for (const auto& g : groups)
    out += fmt::format("  {}{}: {}\n", g.suspect ? "* " : "", escape_for_text(members(g)),
                       escape_for_text(g.what));
  for (const auto& s : words.suspect_reasons)
    out += fmt::format("  suspect: {}\n", escape_for_text(s));
  for (const auto& n : words.notes) out += fmt::format("  note: {}\n", escape_for_text(n));
  return out;
}

std::vector<GroupLine> group_lines(const WatchVerdict& v) {
  std::vector<GroupLine> out;
  for (const auto& g : v.groups)
    out.push_back({g.ranks, g.pids, g.hosts, behaviour_words(g.behaviour), g.suspect});
  return out;
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

// A pool member stuck in the program's own code: "slept in work (pool.py:11) for the whole
// window (clock_nanosleep() for 5.4 s)".
std::string pool_wait_words(const Behaviour& b) {
  bool sleep = b.syscall == "clock_nanosleep" || b.syscall == "nanosleep";
  std::string call = b.syscall.empty() ? "off CPU" : b.syscall + "()";
  std::string what =
      fmt::format("{} in {}", sleep ? "slept" : "waited", short_frame_label(*b.user_frame));
  if (b.before_window)
    return fmt::format("{} for the whole window ({} for {:.1f} s)", what, call, b.wait_s);
  return fmt::format("{} for {:.1f} s ({})", what, b.wait_s, call);
}

}  // namespace

std::string exit_words(const ProcessExit& e) {
  switch (e.kind) {
    case ExitKind::exited:
      return fmt::format("exited with status {}", e.status);
    case ExitKind::killed: {
      const char* name = sigabbrev_np(e.signal);
      return fmt::format("killed by {}{}",
                         name ? fmt::format("SIG{}", name) : fmt::format("signal {}", e.signal),
                         e.core_dumped ? " (core dumped)" : "");
    }
    case ExitKind::unknown:
      break;
  }
  return "ended (its exit status is not known without eBPF)";
}

std::string note_words(const WatchNote& n) {
  switch (n.kind) {
    case WatchNoteKind::python_not_watched:
      return n.detail;  // the recorder's Error says it whole (Recorder::watch_python)
    case WatchNoteKind::no_python_frames:
      return "no Python frames in samples: " + n.detail;
    case WatchNoteKind::samples_before_exec:
      return fmt::format(
          "{} samples from before its exec at {:.1f} s not resolved: the program they ran is gone",
          n.count, n.t_s);
    case WatchNoteKind::stacks_not_resolved:
      break;
  }
  return fmt::format("pid {}: {} sampled stacks not resolved: {}", n.pid, n.count, n.detail);
}

std::string behaviour_words(const Behaviour& b) {
  switch (b.kind) {
    case BehaviourKind::ended:
      return exit_words(b.exit);
    case BehaviourKind::pool_wait:
      if (b.user_frame) return pool_wait_words(b);
      [[fallthrough]];
    case BehaviourKind::stuck: {
      std::string call = b.syscall.empty() ? "off CPU outside a system call" : b.syscall + "()";
      return fmt::format("stuck in {} ({:.1f} s{})", call, b.wait_s,
                         b.before_window ? ", since before the window" : "");
    }
    case BehaviourKind::active:
      break;
  }
  return fmt::format("active (on CPU {:.0f}%, {} waits ended)", b.cpu_share * 100, b.wait_count);
}

WatchVerdictWords watch_verdict_words(const WatchVerdict& v) {
  WatchVerdictWords out;
  if (!v.basis) return out;
  const JobSnapshot& job = v.basis->job;
  const Analysis& a = v.basis->analysis;
  VerdictWords words = verdict_words(job, a);  // report/finding_words.h
  out.suspect_reasons = std::move(words.suspect_reasons);
  out.notes = std::move(words.wait_chains);  // an owner that waits for its straggler
  for (std::size_t i = 0; i < a.note_findings.size(); ++i) {
    const Finding& f = a.note_findings[i];
    // The verdict's words are a snapshot's; here the key is a behaviour, not a stack.
    if (f.kind == FindingKind::same_stack) {
      out.notes.push_back(fmt::format("all {} {} did the same in the window", f.count,
                                      f.flag ? "ranks" : "processes"));
    } else {
      out.notes.push_back(std::move(words.notes[i]));
    }
  }
  return out;
}

void verdict_into_json(const WatchVerdict& v, nlohmann::json& j) {
  j["groups"] = nlohmann::json::array();
  for (const auto& g : v.groups) {
    nlohmann::json gj{{"ranks", g.ranks},
                      {"pids", g.pids},
                      {"what", behaviour_words(g.behaviour)},
                      {"behaviour", behaviour_to_json(g.behaviour)},
                      {"suspect", g.suspect}};
    if (!g.hosts.empty()) gj["nodes"] = g.hosts;
    j["groups"].push_back(std::move(gj));
  }
  WatchVerdictWords words = watch_verdict_words(v);
  j["suspects"] = v.suspects;
  j["suspect_reasons"] = words.suspect_reasons;
  j["group_notes"] = words.notes;
  j["findings"] =
      v.basis ? findings_to_json(v.basis->job, v.basis->analysis) : nlohmann::json::array();
}

std::string verdict_text(const WatchVerdict& v) {
  return lines(group_lines(v), watch_verdict_words(v));
}

std::string verdict_text(const nlohmann::json& j) {
  std::vector<GroupLine> groups;
  if (j.contains("groups") && j["groups"].is_array()) {
    for (const auto& gj : j["groups"]) {
      if (!gj.is_object()) continue;
      GroupLine& g = groups.emplace_back();
      g.ranks = array_of<int>(gj, "ranks");
      g.pids = array_of<int>(gj, "pids");
      g.hosts = array_of<std::string>(gj, "nodes");
      g.what = gj.value("what", std::string());
      g.suspect = gj.value("suspect", false);
    }
  }
  WatchVerdictWords words{array_of<std::string>(j, "suspect_reasons"),
                          array_of<std::string>(j, "group_notes")};
  return lines(groups, words);
}

}  // namespace hangscan
