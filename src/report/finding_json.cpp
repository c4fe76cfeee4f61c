// Findings as JSON: kind, members, frames and the figures of each kind.
#include "report/finding_json.h"

#include "report/json_writer.h"

namespace hangscan {

using nlohmann::json;

namespace {

// The ranks a finding is about: its members' (a death: the rank it was), or the missing ones.
std::vector<int> subject_ranks(const JobSnapshot& job, const Finding& f) {
  std::vector<int> out;
  for (std::size_t m : f.members) {
    if (job.processes[m].rank) out.push_back(*job.processes[m].rank);
  }
  if (f.kind == FindingKind::missing_ranks) out = f.ranks;
  if (f.kind == FindingKind::death && f.rank && out.empty()) out.push_back(*f.rank);
  return out;
}

json frame_json(const StackTrie& trie, const FrameRef& r) {
  const Frame* f = resolve(trie, r);
  if (!f) return nullptr;
  return {
      {"function", f->function}, {"file", json_or_null(f->file)}, {"line", json_or_null(f->line)}};
}

json death_figures(const Finding& f) {
  json out = {{"linked", f.flag},
              {"rank_from", rank_from_name(f.rank_from)},
              {"zombie_of", json_or_null(f.zombie_of)},
              {"missing_ranks", f.ranks}};
  const Death& d = *f.death;
  out["how"] = d.how;
  out["pid"] = json_or_null(d.pid);
  out["host"] = d.host;
  out["signal"] = json_or_null(d.signal);
  out["exit_code"] = json_or_null(d.exit_code);
  out["stopped_by"] = nullptr;  // the launcher ending the others, as its log says (--logs)
  if (f.stopped) {
    out["stopped_by"] = {{"by", f.stopped->by},
                         {"signal", f.stopped->signal},
                         {"source", f.stopped->source},
                         {"at", json_or_null(f.stopped->at)}};
  }
  return out;
}

// A note's figures: what it counts or names.
json note_figures(const Finding& f) {
  switch (f.kind) {
    case FindingKind::incomplete_stack: {
      const Frame* last = f.frames.empty() ? nullptr : f.frames.front().frame;
      return {{"module", last && !last->module.empty() ? json(last->module) : json(nullptr)}};
    }
    case FindingKind::same_stack:
      return {{"count", f.count}, {"ranked", f.flag}};
    case FindingKind::no_majority: {
      json ends = json::array();
      for (const FrameRef& r : f.frames) ends.push_back(r.node == parting_node(f));
      return {{"branches", f.count}, {"parts", f.parts}, {"ends", std::move(ends)}};
    }
    case FindingKind::implausible_world_size:
      return {{"world_size", f.world_size}};
    case FindingKind::invalid_thread_regex:
      return {{"regex", f.value}};
    default:
      return json::object();
  }
}

// What a kind counts or names beyond members and frames.
json figures(const Finding& f) {
  switch (f.kind) {
    case FindingKind::divergence:
      return {{"no_stack", f.frames.empty()}, {"frames_left_out", f.gap_before != Finding::kNoGap}};
    case FindingKind::bad_state:
      return {{"state", std::string(1, f.state)},
              {"wchan", f.wchan.empty() ? json(nullptr) : json(f.wchan)}};
    case FindingKind::death:
      return f.death ? death_figures(f) : json::object();
    case FindingKind::missing_ranks:
      return {{"world_size", f.world_size}};
    case FindingKind::pool_straggler:
      return {{"owner", json_or_null(f.owner)},
              {"owner_pid", f.owner_pid},
              {"only_worker", f.flag},
              {"idle", f.idle},
              {"busy", f.busy}};
    case FindingKind::locals_split:
      return {{"local", f.local}, {"value", f.value}, {"majority_value", f.majority_value}};
    case FindingKind::wait_chain:
      return {{"chain", f.flag}};
    case FindingKind::deadlock: {
      json via = json::array();
      for (const WaitEdge* e : f.via) via.push_back(e ? json(e->via) : json(nullptr));
      return {{"processes", f.flag}, {"tids", f.tids}, {"via", std::move(via)}};
    }
    case FindingKind::pool_wait:
    case FindingKind::wait_cycle:
      break;
    default:  // the notes (FindingKind::incomplete_stack and after)
      return note_figures(f);
  }
  return json::object();
}

json finding_json(const JobSnapshot& job, const StackTrie& trie, const Finding& f) {
  json frames = json::array();
  for (const FrameRef& r : f.frames) frames.push_back(frame_json(trie, r));
  return {
      {"kind", finding_kind_name(f.kind)},  {"members", f.members}, {"others", f.others},
      {"ranks", subject_ranks(job, f)},     {"hosts", f.hosts},     {"frames", std::move(frames)},
      {"place", frame_json(trie, f.place)}, {"figures", figures(f)}};
}

}  // namespace

json rank_from_name(Finding::RankFrom from) {
  switch (from) {
    case Finding::RankFrom::own:
      return "own";
    case Finding::RankFrom::launcher:
      return "launcher";
    case Finding::RankFrom::only_missing:
      return "only_missing_rank";
    case Finding::RankFrom::log:
      return "log";
    default:
      return nullptr;
  }
}

json findings_to_json(const JobSnapshot& job, const Analysis& a) {
  json out = json::array();
  for (const Finding& f : a.findings) out.push_back(finding_json(job, a.trie, f));
  for (const Finding& f : a.wait_findings) out.push_back(finding_json(job, a.trie, f));
  for (const Finding& f : a.deadlock_findings) out.push_back(finding_json(job, a.trie, f));
  for (const Finding& f : a.note_findings) out.push_back(finding_json(job, a.trie, f));
  return out;
}

}  // namespace hangscan
