// DOT and folded-stack writers.
#include "report/graph_writers.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "group/stack_key.h"
#include "group/wait_graph.h"
#include "report/member_words.h"
#include "util/escape.h"

namespace hangscan {

namespace {

// A DOT string of target-controlled text: control bytes made visible first (util/escape.h),
// then quotes and backslashes escaped for DOT (where `\n` would be a line break), so a name
// never breaks a label's lines; labels of two lines join escaped parts with kDotLineBreak.
std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : escape_for_text(s)) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

constexpr const char* kDotLineBreak = "\\n";

// One frame of a folded line: control bytes visible (util/escape.h), and ';' (the frame
// separator) written as ':', so a name cannot end a frame or a line.
std::string folded_label(const Frame& f, GroupOptions::Granularity g) {
  std::string s = escape_for_text(granular_frame_label(f, g));
  for (char& c : s) {
    if (c == ';') c = ':';
  }
  return s;
}

// Who waits on whom (group/wait_graph.h): one node per process in a wait, dashed edges.
void write_wait_edges(const JobSnapshot& job, std::string& out) {
  std::vector<ProcessWait> waits = process_waits(job);
  if (waits.empty()) return;
  std::set<std::size_t> shown;
  for (const ProcessWait& w : waits) shown.insert({w.from, w.to});
  out += "  subgraph cluster_waits {\n    label=\"waits on\";\n";
  for (std::size_t i : shown) {
    out += fmt::format("    w{} [label=\"{}\", shape=ellipse];\n", i,
                       dot_escape(member_name(job.processes[i])));
  }
  for (const ProcessWait& w : waits) {
    out += fmt::format("    w{} -> w{} [label=\"{}\", style=dashed];\n", w.from, w.to,
                       dot_escape(w.via));
  }
  out += "  }\n";
}

}  // namespace

std::string write_dot(const JobSnapshot& job, const Analysis& a) {
  const StackTrie& t = a.trie;
  std::string out = "digraph hangscan {\n  node [shape=box, fontname=\"monospace\"];\n";
  auto all_suspect = [&](const std::vector<std::size_t>& members) {
    return !members.empty() && std::all_of(members.begin(), members.end(),
                                           [&](std::size_t m) { return a.is_suspect(m); });
  };
  out += fmt::format(
      "  n0 [label=\"{}\", shape=ellipse];\n",
      dot_escape(fmt::format("{} ({})", job.job_id.empty() ? "job" : "job " + job.job_id,
                             member_set_label(job, t.members(StackTrie::kRoot)))));
  for (std::size_t i = 1; i < t.nodes().size(); ++i) {
    const TrieNode& n = t.node(i);
    std::vector<std::size_t> members = t.members(i);
    std::string label = dot_escape(n.frame.function);
    if (n.frame.file) {
      label += kDotLineBreak + dot_escape(std::string(base_name(*n.frame.file)));
      if (n.frame.line) label += fmt::format(":{}", *n.frame.line);
    } else if (!n.frame.module.empty()) {
      label += kDotLineBreak + dot_escape(std::string(base_name(n.frame.module)));
    }
    bool suspect = all_suspect(members);
    out += fmt::format("  n{} [label=\"{}\"{}];\n", i, label,
                       suspect ? ", style=filled, fillcolor=\"#ffcccc\", color=red" : "");
    out += fmt::format("  n{} -> n{} [label=\"{}\"{}];\n", n.parent, i,
                       dot_escape(member_set_label(job, members)),
                       suspect ? ", color=red, fontcolor=red, penwidth=2" : "");
  }
  write_wait_edges(job, out);
  out += "}\n";
  return out;
}

std::string write_folded(const JobSnapshot& job, const GroupOptions& opts) {
  bool has_ranks = std::any_of(job.processes.begin(), job.processes.end(),
                               [](const ProcessSnapshot& p) { return p.role == "rank"; });
  bool any_groupable =
      std::any_of(job.processes.begin(), job.processes.end(),
                  [&](const ProcessSnapshot& p) { return is_groupable(p, has_ranks); });
  ThreadSelector selector(opts);
  std::map<std::string, std::size_t> counts;
  std::string key;
  for (const ProcessSnapshot& p : job.processes) {
    if (any_groupable && !is_groupable(p, has_ranks)) continue;
    for (std::size_t ti : selector.select(p)) {
      FrameRange r = key_frames(p.threads[ti], opts.top_n);
      if (r.size() == 0) continue;
      key.clear();
      for (const Frame* f = r.end; f != r.begin;) {
        --f;
        if (!key.empty()) key += ';';
        key += folded_label(*f, opts.granularity);
      }
      ++counts[key];
    }
  }
  std::string out;
  for (const auto& [stack, n] : counts) out += fmt::format("{} {}\n", stack, n);
  return out;
}

}  // namespace hangscan
