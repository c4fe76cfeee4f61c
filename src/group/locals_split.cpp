// Locals split: the minority value of a scalar local among ranks on one stack.
#include "group/locals_split.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "group/rank_set.h"

namespace hangscan {

namespace {

constexpr std::size_t kMaxIntDigits = 20;
constexpr std::size_t kMaxShortString = 40;  // quotes included

bool is_int(const std::string& v) {
  std::size_t start = !v.empty() && v[0] == '-' ? 1 : 0;
  if (v.size() <= start || v.size() - start > kMaxIntDigits) return false;
  return std::all_of(v.begin() + static_cast<std::ptrdiff_t>(start), v.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

bool is_short_string(const std::string& v) {
  return v.size() >= 2 && v.size() <= kMaxShortString && (v[0] == '\'' || v[0] == '"') &&
         v.back() == v[0];
}

// Code of the standard library, installed packages and frozen modules: not where a step loop
// of the job lives.
bool is_library(const std::string& file) {
  return file.empty() || file[0] == '<' || file.find("/lib/python") != std::string::npos ||
         file.find("/site-packages/") != std::string::npos ||
         file.find("/dist-packages/") != std::string::npos;
}

// The innermost user frames of a member's key thread, innermost first.
std::vector<const Frame*> user_frames(const ProcessSnapshot& p, const ThreadSelector& selector) {
  std::vector<const Frame*> out;
  auto sel = selector.select(p);
  if (sel.empty()) return out;
  for (const Frame& f : p.threads[sel.front()].frames) {
    if (out.size() == kLocalsSplitFrames) break;
    if (f.kind == FrameKind::python && f.file && !is_library(*f.file)) out.push_back(&f);
  }
  return out;
}

const Local* find_local(const Frame& f, const std::string& name) {
  for (const Local& l : f.locals) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

// The split by local `name` of frame `depth` of every member, if it has a clear majority.
std::optional<LocalsSplit> split_on(const std::vector<std::vector<const Frame*>>& frames,
                                    const std::vector<std::size_t>& members, std::size_t depth,
                                    const std::string& name) {
  std::map<std::string, LocalsSplit::Part> by_value;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const Local* l = find_local(*frames[i][depth], name);
    if (l == nullptr || !(is_int(l->value) || is_short_string(l->value))) return std::nullopt;
    auto [it, fresh] = by_value.try_emplace(l->value);
    if (fresh) it->second = LocalsSplit::Part{l->value, {}, *frames[i][depth], frames[i][depth]};
    it->second.members.push_back(members[i]);
  }
  if (by_value.size() < 2) return std::nullopt;
  LocalsSplit s;
  s.local = name;
  for (auto& [value, part] : by_value) {
    if (part.members.size() * 2 > members.size()) s.majority = std::move(part);
    else s.minority.push_back(std::move(part));
  }
  if (s.majority.members.empty()) return std::nullopt;
  std::stable_sort(s.minority.begin(), s.minority.end(), [](const auto& x, const auto& y) {
    if (x.members.size() != y.members.size()) return x.members.size() < y.members.size();
    return x.members.front() < y.members.front();
  });
  return s;
}

bool has_python_stack(const JobSnapshot& job, const std::vector<std::size_t>& members,
                      const ThreadSelector& selector) {
  return std::all_of(members.begin(), members.end(), [&](std::size_t m) {
    const ProcessSnapshot& p = job.processes[m];
    auto sel = selector.select(p);
    if (sel.empty()) return false;
    const auto& frames = p.threads[sel.front()].frames;
    return std::any_of(frames.begin(), frames.end(),
                       [](const Frame& f) { return f.kind == FrameKind::python; });
  });
}

bool any_locals(const JobSnapshot& job, const std::vector<std::size_t>& members,
                const ThreadSelector& selector) {
  return std::any_of(members.begin(), members.end(), [&](std::size_t m) {
    const ProcessSnapshot& p = job.processes[m];
    for (std::size_t t : selector.select(p)) {
      for (const Frame& f : p.threads[t].frames) {
        if (!f.locals.empty()) return true;
      }
    }
    return false;
  });
}

}  // namespace

std::optional<LocalsSplit> split_by_locals(const JobSnapshot& job,
                                           const std::vector<std::size_t>& members,
                                           const GroupOptions& opts) {
  if (members.size() < 3) return std::nullopt;  // two members have no majority
  ThreadSelector selector(opts);
  std::vector<std::vector<const Frame*>> frames;
  frames.reserve(members.size());
  for (std::size_t m : members) frames.push_back(user_frames(job.processes[m], selector));
  for (const auto& f : frames) {
    if (f.size() != frames.front().size()) return std::nullopt;
  }
  for (std::size_t depth = 0; depth < frames.front().size(); ++depth) {
    const std::vector<Local>& locals = frames.front()[depth]->locals;
    for (std::size_t i = 0; i < locals.size() && i < kLocalsSplitLocals; ++i) {
      if (auto s = split_on(frames, members, depth, locals[i].name)) return s;
    }
  }
  return std::nullopt;
}

std::vector<Finding> locals_split_findings(const LocalsSplit& s) {
  std::vector<Finding> out;
  for (const LocalsSplit::Part& p : s.minority) {
    Finding f{.kind = FindingKind::locals_split,
              .members = p.members,
              .others = s.majority.members,
              .frames = {FrameRef{.frame = p.in_job}}};
    f.local = s.local;
    f.value = p.value;
    f.majority_value = s.majority.value;
    out.push_back(std::move(f));
  }
  return out;
}

void apply_locals_split(const JobSnapshot& job, Analysis& a) {
  if (a.groups.size() != 1 || a.grouped.size() < 2) return;
  ThreadSelector selector(a.options);
  if (!any_locals(job, a.grouped, selector)) {
    if (has_python_stack(job, a.grouped, selector))
      a.note_findings.push_back(Finding{.kind = FindingKind::locals_hint});
    return;
  }
  auto split = split_by_locals(job, a.grouped, a.options);
  if (!split) return;
  for (Finding& f : locals_split_findings(*split)) a.findings.push_back(std::move(f));
  std::set<std::size_t> flagged(a.suspect_members.begin(), a.suspect_members.end());
  std::vector<int> ranks = a.suspects;
  for (const LocalsSplit::Part& p : split->minority) {
    for (std::size_t m : p.members) {
      flagged.insert(m);
      if (job.processes[m].rank) ranks.push_back(*job.processes[m].rank);
    }
  }
  a.suspect_members.assign(flagged.begin(), flagged.end());
  a.suspects = RankSet(std::move(ranks)).values();
}

}  // namespace hangscan
