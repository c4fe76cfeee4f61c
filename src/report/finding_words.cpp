// One sentence per finding: the words of the suspect rules, the pool rules, the wait chains,
// the deadlocks and the notes; with --logs, the ranks' last log lines beside them.
#include "report/finding_words.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "group/analysis.h"
#include "group/deadlock.h"
#include "group/death_findings.h"
#include "group/rank_set.h"
#include "group/stack_key.h"
#include "group/wait_graph.h"
#include "report/member_words.h"
#include "util/parse_number.h"

namespace hangscan {

namespace {

const char* is_are(std::size_t n) { return n > 1 ? "are" : "is"; }

std::string label(const StackTrie& trie, const FrameRef& r) {
  const Frame* f = resolve(trie, r);
  return f ? short_frame_label(*f) : std::string();
}

// "work (pool_hang.py:29)", or "produce (q.py:40) -> put (queues.py:94)".
std::string place_words(const StackTrie& trie, const std::vector<FrameRef>& frames) {
  std::string out;
  for (const FrameRef& r : frames) out += (out.empty() ? "" : " -> ") + label(trie, r);
  return out;
}

std::string who(const JobSnapshot& job, const Finding& f) {
  std::string out = describe_members(job, f.members);
  if (f.hosts.empty()) return out;
  std::string list;
  for (const std::string& h : f.hosts) list += (list.empty() ? "" : ",") + h;
  return out + " on " + list;
}

std::string divergence(const JobSnapshot& job, const StackTrie& trie, const Finding& f) {
  bool plural = f.members.size() > 1;
  std::string where;
  if (f.frames.empty()) {
    where = plural ? "they have no stack" : "it has no stack";
  } else {
    where = plural ? "they are in " : "it is in ";
    for (std::size_t i = 0; i < f.frames.size(); ++i) {
      if (i) where += " -> ";
      if (i == f.gap_before) where += "... -> ";
      where += label(trie, f.frames[i]);
    }
  }
  const Frame* majority = resolve(trie, f.place);
  return fmt::format("{} {} not in {} with {}: {}", who(job, f), is_are(f.members.size()),
                     majority ? majority->function : std::string("an empty stack"),
                     describe_members(job, f.others), where);
}

std::string bad_state(const JobSnapshot& job, const Finding& f) {
  bool plural = f.members.size() > 1;
  std::string members = describe_members(job, f.members);
  const char* verb = is_are(f.members.size());
  switch (f.state) {
    case 'Z':
      return fmt::format("{} {} {} (state Z): exited but not reaped by the parent", members, verb,
                         plural ? "zombies" : "a zombie");
    case 'X':
      return fmt::format("{} {} dead (state X)", members, verb);
    case 'T':
      return fmt::format("{} {} stopped (state T)", members, verb);
    case 't':
      return fmt::format("{} {} stopped by a tracer (state t)", members, verb);
    default:
      return fmt::format("{} {} in uninterruptible sleep (state D){}", members, verb,
                         f.wchan.empty() ? std::string() : " in " + f.wchan);
  }
}

std::string death(const JobSnapshot& job, const StackTrie& trie, const Finding& f) {
  const Death& d = *f.death;
  std::string where = f.host.empty() ? "" : " on " + f.host;
  std::string pid = d.pid ? fmt::format("pid {}", *d.pid) : std::string("a process");
  std::string s =
      f.rank ? fmt::format("rank {} ({}{})", *f.rank, pid, where)
             : fmt::format("{}{}{}", pid, d.comm.empty() ? "" : " (" + d.comm + ")", where);
  s += " " + death_words(d);
  if (f.zombie_of) s += fmt::format(" (a zombie: not reaped by pid {})", *f.zombie_of);
  if (!f.rank && !f.ranks.empty()) {
    s += fmt::format(" while ranks {} went missing; which rank it was is not known",
                     compress_ranges(f.ranks));
  }
  if (f.others.empty()) return s;
  bool plural = f.others.size() > 1;
  if (f.stopped)  // the launcher's log says it is ending them: they no longer wait
    return s + fmt::format("; {} is stopping {} ({}{}, {}), {} in {}", f.stopped->by,
                           describe_members(job, f.others), f.stopped->signal,
                           f.stopped->at ? " at " + clock_words(*f.stopped->at) : "",
                           f.stopped->source, plural ? "which are" : "which is",
                           label(trie, f.place));
  return s +
         fmt::format("; {} {} in {}", describe_members(job, f.others),
                     f.flag ? (plural ? "wait for it" : "waits for it") : is_are(f.others.size()),
                     label(trie, f.place));
}

std::string missing(const Finding& f) {
  std::string set = compress_ranges(f.ranks);
  bool plural = f.ranks.size() > 1;
  return fmt::format("{} {} {} missing: the world size is {} but no process with {} {} was found",
                     plural ? "ranks" : "rank", set, plural ? "are" : "is", f.world_size,
                     plural ? "ranks" : "rank", set);
}

// member_name(), with the pool's host for a member that has none of its own (a zombie).
std::string name_in(const Finding& f, const ProcessSnapshot& p) {
  if (!p.host.empty() || f.host.empty()) return member_name(p);
  return fmt::format("{}:{}", f.host, p.pid);
}

// "while 3 other workers are idle and pid 12, another worker, is dead".
std::string siblings_words(const JobSnapshot& job, const Finding& f) {
  std::vector<std::string> parts;
  if (f.idle == 1) parts.push_back("1 other worker is idle");
  if (f.idle > 1) parts.push_back(fmt::format("{} other workers are idle", f.idle));
  if (f.busy == 1) parts.push_back("1 other worker is busy too");
  if (f.busy > 1) parts.push_back(fmt::format("{} other workers are busy too", f.busy));
  if (!f.others.empty()) {
    bool one = f.others.size() == 1;
    std::string dead =
        one ? name_in(f, job.processes[f.others.front()]) : describe_members(job, f.others);
    parts.push_back(fmt::format("{}, {}, {} dead", dead, one ? "another worker" : "other workers",
                                one ? "is" : "are"));
  }
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? " while " : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

std::string straggler(const JobSnapshot& job, const StackTrie& trie, const Finding& f) {
  std::string owner = f.owner          ? member_name(job.processes[*f.owner])
                      : f.host.empty() ? fmt::format("pid {}", f.owner_pid)
                                       : fmt::format("{}:{}", f.host, f.owner_pid);
  return fmt::format("{}, {} worker of {}, is in {}{}", member_name(job.processes[f.members[0]]),
                     f.flag ? "the only" : "a", owner, place_words(trie, f.frames),
                     siblings_words(job, f));
}

std::string locals_split(const JobSnapshot& job, const StackTrie& trie, const Finding& f) {
  return fmt::format("{} {} at {}={} in {}; {} {} at {}={}", describe_members(job, f.members),
                     is_are(f.members.size()), f.local, f.value, place_words(trie, f.frames),
                     describe_members(job, f.others), is_are(f.others.size()), f.local,
                     f.majority_value);
}

std::string pool_wait(const JobSnapshot& job, const StackTrie& trie, const Finding& f) {
  bool one = f.others.size() == 1;
  return fmt::format("{} waits for its worker{} {}{}", member_name(job.processes[f.members[0]]),
                     one ? "" : "s", describe_members(job, f.others),
                     one ? ", in " + place_words(trie, f.frames) : std::string());
}

// "(job.py:11)": where the main thread is, its innermost frame with a line.
std::string where(const ProcessSnapshot& p) {
  const ThreadSnapshot* m = main_thread(p);
  if (!m) return {};
  for (FrameKind kind : {FrameKind::python, FrameKind::native, FrameKind::inline_frame}) {
    for (const Frame& f : m->frames) {
      if (f.kind == kind && f.file && f.line)
        return fmt::format(" ({}:{})", base_name(*f.file), *f.line);
    }
  }
  if (!m->frames.empty()) return fmt::format(" ({})", m->frames.front().function);
  return {};
}

std::string outside_words(const WaitEdge& e) {
  const std::string& v = e.via;
  std::string of = e.pid ? fmt::format(" of pid {}", *e.pid) : "";
  if (v.rfind("pipe:[", 0) == 0)
    return "waits on a pipe" + (e.pid ? fmt::format(" written by pid {}", *e.pid) : "");
  if (v.rfind("tcp listening on ", 0) == 0) return "waits for a connection on " + v.substr(17);
  if (v.rfind("tcp ", 0) == 0) {
    std::string remote = v.substr(v.find(" -> ") == std::string::npos ? 4 : v.find(" -> ") + 4);
    return e.pid ? fmt::format("waits on pid {} over tcp {}", *e.pid, remote)
                 : fmt::format("waits on tcp {}, which no process of the report holds", remote);
  }
  if (v.rfind("unix ", 0) == 0) return "waits on a unix socket" + of;
  return "waits on " + v;
}

// A root waits on no process of the job: on something outside it, or on nothing it can follow.
std::string root_words(const ProcessSnapshot& p) {
  if (p.death || p.state == 'Z' || p.state == 'X') return "which is dead";
  if (const WaitEdge* e = own_thread_edge(p)) {
    std::string who = thread_label(p, *e->tid);
    if (e->via.rfind("mutex ", 0) == 0)
      return fmt::format("which waits{} for a mutex held by its own thread {}", where(p), who);
    return fmt::format("which waits{} on its own thread {} over {}", where(p), who, e->via);
  }
  for (const ThreadWait& w : process_wait_edges(p)) {
    return "which " + outside_words(*w.edge) + where(p);
  }
  const ThreadSnapshot* m = main_thread(p);
  std::string call = m && m->syscall ? *m->syscall : "";
  if (call == "running" || (m && m->state == 'R')) return "which is running" + where(p);
  if (call == "clock_nanosleep" || call == "nanosleep") return "which sleeps" + where(p);
  if (!call.empty() && call != "none") return fmt::format("which is in {}", call) + where(p);
  return "which waits on nothing hangscan can follow" + where(p);
}

std::string names_in_order(const JobSnapshot& job, const std::vector<std::size_t>& path) {
  bool ranked = std::all_of(path.begin(), path.end(),
                            [&](std::size_t i) { return job.processes[i].rank.has_value(); });
  std::string out = ranked ? (path.size() == 1 ? "rank " : "ranks ") : "";
  for (std::size_t k = 0; k < path.size(); ++k) {
    if (k) out += " -> ";
    const ProcessSnapshot& p = job.processes[path[k]];
    out += ranked ? std::to_string(*p.rank) : member_name(p);
  }
  return out;
}

std::string wait_chain(const JobSnapshot& job, const Finding& f) {
  const ProcessSnapshot& root = job.processes[f.others.front()];
  return fmt::format("{} wait{} on {}, {}",
                     f.flag ? names_in_order(job, f.members) : describe_members(job, f.members),
                     f.members.size() == 1 ? "s" : "", member_name(root), root_words(root));
}

// "rank 3 has an incomplete stack (unwinding stopped after poll in libc.so.6); not named ...".
std::string incomplete(const JobSnapshot& job, const Finding& f) {
  const Frame* last = f.frames.empty() ? nullptr : f.frames.front().frame;
  std::string where = last ? short_frame_label(*last) : std::string("no frame");
  if (last && !last->module.empty())
    where += " in " + last->module.substr(last->module.rfind('/') + 1);
  bool plural = f.members.size() > 1;
  return fmt::format("{} {} an incomplete stack (unwinding stopped after {}); not named {}",
                     who(job, f), plural ? "have" : "has", where,
                     plural ? "suspects for it" : "a suspect for it");
}

// "no clear majority: below run, ranks 0-1 are in a and ranks 2-3 are in b; no suspect named".
std::string no_majority(const JobSnapshot& job, const StackTrie& trie, const Finding& f) {
  constexpr std::size_t kShown = 4;
  std::size_t node = parting_node(f);
  std::string list;
  for (std::size_t i = 0; i < f.parts.size() && i < kShown; ++i) {
    const std::vector<std::size_t>& members = f.parts[i];
    std::string where = f.frames[i].node == node
                            ? fmt::format("{} (stack ends)", trie.node(node).frame.function)
                            : trie.node(f.frames[i].node).frame.function;
    list += fmt::format("{}{} {} in {}", i ? (i + 1 == f.parts.size() ? " and " : ", ") : "",
                        describe_members(job, members), is_are(members.size()), where);
  }
  if (f.count > kShown) list += fmt::format(", and {} more branches", f.count - kShown);
  std::string below = node == StackTrie::kRoot
                          ? std::string()
                          : fmt::format("below {}, ", trie.node(node).frame.function);
  return fmt::format("no clear majority: {}{}; no suspect named", below, list);
}

// The words of a note: a verdict that names no suspect.
std::string note(const JobSnapshot& job, const StackTrie& trie, const Finding& f) {
  switch (f.kind) {
    case FindingKind::incomplete_stack:
      return incomplete(job, f);
    case FindingKind::same_stack:
      return fmt::format("all {} {} have the same stack", f.count, f.flag ? "ranks" : "processes");
    case FindingKind::no_majority:
      return no_majority(job, trie, f);
    case FindingKind::implausible_world_size:
      return fmt::format("world size {} is implausible; missing ranks not listed", f.world_size);
    case FindingKind::locals_hint:
      return "--locals can tell them apart: ranks on the same line may be in different "
             "iterations of a loop";
    default:
      return fmt::format("thread regex \"{}\" is invalid: no thread selected", f.value);
  }
}

}  // namespace

std::string finding_sentence(const JobSnapshot& job, const StackTrie& trie, const Finding& f) {
  switch (f.kind) {
    case FindingKind::divergence:
      return divergence(job, trie, f);
    case FindingKind::bad_state:
      return bad_state(job, f);
    case FindingKind::death:
      return death(job, trie, f);
    case FindingKind::missing_ranks:
      return missing(f);
    case FindingKind::pool_straggler:
      return straggler(job, trie, f);
    case FindingKind::locals_split:
      return locals_split(job, trie, f);
    case FindingKind::pool_wait:
      return pool_wait(job, trie, f);
    case FindingKind::wait_chain:
      return wait_chain(job, f);
    case FindingKind::wait_cycle:
      return fmt::format("{} wait on each other in a cycle (none of them waits outside it)",
                         describe_members(job, f.members));
    case FindingKind::deadlock:
      return deadlock_sentence(job, deadlock_of(f));
    default:  // the notes (FindingKind::incomplete_stack and after)
      return note(job, trie, f);
  }
  return {};
}

std::vector<std::string> finding_sentences(const JobSnapshot& job, const StackTrie& trie,
                                           const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  out.reserve(findings.size());
  for (const Finding& f : findings) out.push_back(finding_sentence(job, trie, f));
  return out;
}

namespace {

// "rank 2 " at the start of a sentence: the one rank it is about.
std::optional<int> sentence_rank(const std::string& s) {
  if (s.rfind("rank ", 0) != 0) return std::nullopt;
  std::size_t end = s.find(' ', 5);
  if (end == std::string::npos) return std::nullopt;
  return parse_int_in<int>(std::string_view(s).substr(5, end - 5), 0, 1 << 24);
}

std::string age_words(const RankLastLog& l) {
  if (!l.before_capture_s) return "";
  double s = *l.before_capture_s;
  if (s < 0) return fmt::format(", {:.0f} s after the dump", -s);
  return fmt::format(", {:.0f} s before the dump", s);
}

const RankLastLog* last_log_of(const Analysis& a, int rank) {
  for (const RankLastLog& l : a.last_logs) {
    if (l.rank == rank) return &l;
  }
  return nullptr;
}

// A sentence about one rank with a last log gets it ("...; last log: ..."); `said` the rank.
std::string with_last_log(const Analysis& a, std::string s, std::set<int>* said) {
  auto r = sentence_rank(s);
  const RankLastLog* l = r ? last_log_of(a, *r) : nullptr;
  if (!l) return s;
  if (said) said->insert(*r);
  return s + "; " + last_log_words(*l);
}

}  // namespace

std::string last_log_words(const RankLastLog& l) {
  std::string_view path(l.file);
  std::size_t slash = path.rfind('/');
  std::string_view name = path.substr(slash == std::string_view::npos ? 0 : slash + 1);
  return fmt::format("last log: \"{}\" ({}:{}{})", l.text, name, l.line, age_words(l));
}

std::string suspect_words(const JobSnapshot& job, const Analysis& a, std::size_t i) {
  return with_last_log(a, finding_sentence(job, a.trie, a.findings[i]), nullptr);
}

VerdictWords verdict_words(const JobSnapshot& job, const Analysis& a) {
  VerdictWords w;
  std::set<int> said;
  for (const Finding& f : a.findings)
    w.suspect_reasons.push_back(with_last_log(a, finding_sentence(job, a.trie, f), &said));
  for (int r : a.suspects) {
    const RankLastLog* l = last_log_of(a, r);
    if (!l || said.count(r)) continue;
    w.suspect_reasons.push_back(fmt::format("rank {}'s {}{}", r, last_log_words(*l),
                                            l->where.empty() ? "" : "; it is in " + l->where));
  }
  for (const std::string& s : a.log_verdict) w.suspect_reasons.push_back("logs: " + s);
  w.notes = finding_sentences(job, a.trie, a.note_findings);
  w.wait_chains = finding_sentences(job, a.trie, a.wait_findings);
  w.deadlocks = finding_sentences(job, a.trie, a.deadlock_findings);
  return w;
}

}  // namespace hangscan
