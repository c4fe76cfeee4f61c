// The HTML page's verdict: lines tied to findings, findings tied to nodes of the page's tree.
#include "report/html_verdict.h"

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "group/finding.h"
#include "group/stack_key.h"
#include "group/wait_spread.h"
#include "report/finding_words.h"
#include "report/member_words.h"

namespace hangscan {

using nlohmann::json;

namespace {

// Trie nodes as the page names them: [group, depth] on the first group whose key path holds the
// node (the page's tree is drawn from the groups' key paths, so that pair finds it there).
class PageNodes {
 public:
  PageNodes(const JobSnapshot& job, const Analysis& a) : job_(job), a_(a) {
    paths_.reserve(a.groups.size());
    for (std::size_t g = 0; g < a.groups.size(); ++g) {
      paths_.push_back(a.trie.path_to(a.groups[g].node));
      for (std::size_t d = 0; d < paths_[g].size(); ++d) at_.try_emplace(paths_[g][d], g, d + 1);
    }
  }

  json ref(std::size_t node) const {
    auto it = at_.find(node);
    if (it == at_.end()) return nullptr;
    return json::array({it->second.first, it->second.second});
  }

  // The groups of `members` (ascending, each once; members not grouped have none).
  std::set<std::size_t> groups_of(const std::vector<std::size_t>& members) const {
    std::set<std::size_t> out;
    for (std::size_t m : members) {
      if (m < a_.group_of.size() && a_.group_of[m] != Analysis::kNoGroup)
        out.insert(a_.group_of[m]);
    }
    return out;
  }

  // How deep `f` is in a key stack of `p` (1: outermost), 0 when it is in none: a finding's
  // frame is a member's own (group/finding.h), so its place is exact even in a recursion.
  std::size_t key_depth(const ProcessSnapshot& p, const Frame* f) const {
    std::less<const Frame*> before;
    for (const ThreadSnapshot& t : p.threads) {
      FrameRange r = key_frames(t, a_.options.top_n);
      if (!before(f, r.begin) && before(f, r.end)) return static_cast<std::size_t>(r.end - f);
    }
    return 0;
  }

  // The trie nodes `r` names: its node; or, for a member's own frame, the node at its depth on
  // the key path of the member's group; for the groups of `members` where that is not the
  // frame (another selected thread's), the deepest node with the frame as the grouping
  // compares frames.
  void resolve(const FrameRef& r, const std::vector<std::size_t>& members,
               std::vector<std::size_t>& out) const {
    if (!r.frame) {
      if (r.node != FrameRef::kNoNode && r.node != StackTrie::kRoot) out.push_back(r.node);
      return;
    }
    auto same = [&](std::size_t n) {
      return same_key_frame(a_.trie.node(n).frame, *r.frame, a_.trie.granularity());
    };
    std::set<std::size_t> groups = groups_of(members);
    for (std::size_t m : members) {
      std::size_t d = key_depth(job_.processes[m], r.frame);
      auto g = groups.find(d ? a_.group_of[m] : Analysis::kNoGroup);
      if (g == groups.end() || d > paths_[*g].size() || !same(paths_[*g][d - 1])) continue;
      out.push_back(paths_[*g][d - 1]);
      groups.erase(g);
      if (groups.empty()) return;
    }
    for (std::size_t g : groups) {
      const std::vector<std::size_t>& path = paths_[g];
      auto hit = std::find_if(path.rbegin(), path.rend(), same);
      if (hit != path.rend()) out.push_back(*hit);
    }
  }

  // Where a finding's members are: the nodes of its frames, else the ends of their groups.
  json nodes_of(const Finding& f) const {
    std::vector<std::size_t> nodes;
    for (const FrameRef& r : f.frames) resolve(r, f.members, nodes);
    if (f.frames.empty()) {
      for (std::size_t g : groups_of(f.members)) nodes.push_back(a_.groups[g].node);
    }
    json out = json::array();
    std::set<std::size_t> seen;
    for (std::size_t n : nodes) {
      json page = ref(n);
      if (seen.insert(n).second && !page.is_null()) out.push_back(std::move(page));
    }
    return out;
  }

  json place_of(const Finding& f) const {
    std::vector<std::size_t> nodes;
    resolve(f.place, f.others, nodes);
    return nodes.empty() ? json(nullptr) : ref(nodes.front());
  }

 private:
  const JobSnapshot& job_;
  const Analysis& a_;
  std::vector<std::vector<std::size_t>> paths_;
  std::unordered_map<std::size_t, std::pair<std::size_t, std::size_t>> at_;
};

// `list` (process indexes, ascending) as whole groups and the rest, {"groups": [...], "more":
// [...]}, when that is shorter: a divergence's majority of 9,999 ranks is one group, not 9,999
// numbers (10,000 ranks with 192 odd ones made the page 9 MB larger).
json as_groups(const std::vector<std::size_t>& list, const Analysis& a) {
  constexpr std::size_t kPlain = 16;
  if (list.size() <= kPlain || !std::is_sorted(list.begin(), list.end())) return list;
  std::unordered_map<std::size_t, std::size_t> in_group;
  for (std::size_t m : list) {
    if (m < a.group_of.size() && a.group_of[m] != Analysis::kNoGroup) ++in_group[a.group_of[m]];
  }
  std::set<std::size_t> whole;
  for (auto [g, n] : in_group) {
    if (n == a.groups[g].members.size()) whole.insert(g);
  }
  json more = json::array();
  for (std::size_t m : list) {
    bool grouped = m < a.group_of.size() && whole.count(a.group_of[m]);
    if (!grouped) more.push_back(m);
  }
  return {{"groups", whole}, {"more", std::move(more)}};
}

json line(std::string text, const char* cls) { return {{"text", std::move(text)}, {"class", cls}}; }

}  // namespace

void add_page_findings(json& findings, const JobSnapshot& job, const Analysis& a) {
  PageNodes pages(job, a);
  std::size_t i = 0;
  for (const auto* list : {&a.findings, &a.wait_findings, &a.deadlock_findings}) {
    for (const Finding& f : *list) {
      if (i >= findings.size()) return;
      findings[i]["nodes"] = pages.nodes_of(f);
      findings[i]["place_node"] = pages.place_of(f);
      bool ordered =
          f.kind == FindingKind::deadlock || (f.kind == FindingKind::wait_chain && f.flag);
      if (!ordered) findings[i]["members"] = as_groups(f.members, a);
      findings[i]["others"] = as_groups(f.others, a);
      ++i;
    }
  }
}

json verdict_lines(const JobSnapshot& job, const Analysis& a) {
  // The sentences, each list in its findings' order (report/finding_words.h).
  VerdictWords words = verdict_words(job, a);
  json out = json::array();
  for (std::size_t i = 0; i < words.suspect_reasons.size(); ++i) {
    const std::string& r = words.suspect_reasons[i];
    out.push_back(line("SUSPECT " + r, r.starts_with("logs: ") ? "suspect from-logs" : "suspect"));
    if (i < a.findings.size()) out.back()["finding"] = i;
  }
  for (const std::string& n : words.notes) out.push_back(line("note: " + n, "note"));
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    const Group& grp = a.groups[g];
    if (!grp.wait) continue;
    out.push_back(line("timing: " + wait_sentence(job, grp, *grp.wait), "timing"));
    out.back()["group"] = g;
  }
  std::size_t first = a.findings.size();
  for (std::size_t i = 0; i < words.wait_chains.size(); ++i) {
    out.push_back(line("waits: " + words.wait_chains[i], "waits"));
    if (i < a.wait_findings.size()) out.back()["finding"] = first + i;
  }
  first += a.wait_findings.size();
  for (std::size_t i = 0; i < words.deadlocks.size(); ++i) {
    out.push_back(line("deadlock: " + words.deadlocks[i], "deadlock"));
    if (i < a.deadlock_findings.size()) out.back()["finding"] = first + i;
  }
  if (words.suspect_reasons.empty() && words.notes.empty() && a.grouped.size() < 2 &&
      !a.grouped.empty())
    out.push_back(line("note: only one process grouped", "note"));
  return out;
}

}  // namespace hangscan
