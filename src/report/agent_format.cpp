// Agent documents: interning frames and stacks; merging node documents.
#include "report/agent_format.h"

#include <fmt/core.h>

#include <functional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "group/wait_graph.h"
#include "report/json_writer.h"
#include "util/hash_mix.h"
#include "util/stack_table.h"
#include "util/version.h"

namespace hangscan {

using nlohmann::json;

namespace {

struct FrameHash {
  std::size_t operator()(const Frame& f) const { return frame_content_hash(f); }
};

struct IdsHash {
  std::size_t operator()(const std::vector<std::size_t>& ids) const {
    std::size_t h = ids.size();
    for (std::size_t id : ids) hash_mix(h, id);
    return h;
  }
};

// String, frame and stack tables of one agent document. Frames are compact arrays
// [kind, function, file, line, module, pc, offset, build_id, locals, column, end_line,
// end_column, source] with strings by index
// and trailing defaults left out (docs/output-schema.md, "Agent wire format").
class Tables : public StackInterner {
 public:
  std::size_t intern(const std::vector<Frame>& stack) override {
    ids_.clear();
    for (const Frame& f : stack) {
      auto [it, inserted] = frame_ids_.try_emplace(f, frames_.size());
      if (inserted) frames_.push_back(compact(f));
      ids_.push_back(it->second);
    }
    auto [it, inserted] = stack_ids_.try_emplace(ids_, stacks_.size());
    if (inserted) stacks_.push_back(ids_);
    return it->second;
  }

  json strings() { return std::move(strings_); }
  json frames() { return std::move(frames_); }
  json stacks() { return std::move(stacks_); }

 private:
  std::size_t str(const std::string& s) {
    auto [it, inserted] = string_ids_.try_emplace(s, strings_.size());
    if (inserted) strings_.push_back(s);
    return it->second;
  }

  json compact(const Frame& f) {
    json a = json::array(
        {static_cast<int>(f.kind), str(f.function), f.file ? json(str(*f.file)) : json(nullptr),
         f.line ? json(*f.line) : json(nullptr), str(f.module), f.pc, f.offset, str(f.build_id)});
    bool position = f.column || f.end_line || f.end_column || f.source;
    if (!f.locals.empty() || position) {
      json locals = json::array();
      for (const Local& l : f.locals) locals.push_back(json::array({str(l.name), str(l.value)}));
      a.push_back(std::move(locals));
    }
    if (position) {
      auto num = [](const std::optional<int>& v) { return v ? json(*v) : json(nullptr); };
      a.push_back(num(f.column));
      a.push_back(num(f.end_line));
      a.push_back(num(f.end_column));
      a.push_back(f.source ? json(str(*f.source)) : json(nullptr));
    }
    // Trailing defaults (0 addresses, empty strings, null) carry nothing.
    while (a.size() > 2) {
      const json& last = a.back();
      bool empty_string = last.is_number_unsigned() && (a.size() == 5 || a.size() == 8) &&
                          strings_[last.get<std::size_t>()].is_string() &&
                          strings_[last.get<std::size_t>()].get_ref<const std::string&>().empty();
      bool zero = (a.size() == 6 || a.size() == 7) && last.is_number_unsigned() &&
                  last.get<std::uint64_t>() == 0;
      if (!last.is_null() && !empty_string && !zero) break;
      a.erase(a.size() - 1);
    }
    return a;
  }

  std::unordered_map<std::string, std::size_t> string_ids_;
  std::unordered_map<Frame, std::size_t, FrameHash> frame_ids_;
  std::unordered_map<std::vector<std::size_t>, std::size_t, IdsHash> stack_ids_;
  std::vector<std::size_t> ids_;
  json strings_ = json::array();
  json frames_ = json::array();
  json stacks_ = json::array();
};

// Drops keys the reader defaults anyway (null, and empty/zero/false where that is the model's
// default), so per-rank metadata stays small on the wire.
void prune(json& obj) {
  static const char* const kDefaultable[] = {
      "host",        "launcher",   "role",        "exe",           "cmdline",
      "annotations", "omitted",    "diagnostics", "threads",       "ppid",
      "start_ticks", "pause_us",   "name",        "notes",         "is_main",
      "crashed",     "incomplete", "cpu_ticks",   "gc_collecting", "finalizing"};
  for (auto it = obj.begin(); it != obj.end();) {
    const json& v = it.value();
    bool drop = v.is_null();
    if (!drop) {
      bool empty = (v.is_array() && v.empty()) ||
                   (v.is_string() && v.get_ref<const std::string&>().empty()) ||
                   (v.is_boolean() && !v.get<bool>()) ||
                   (v.is_number_integer() && v.get<std::int64_t>() == 0);
      if (empty) {
        for (const char* k : kDefaultable) drop = drop || it.key() == k;
      }
    }
    it = drop ? obj.erase(it) : std::next(it);
  }
}

}  // namespace

std::string write_agent_json(const JobSnapshot& job) {
  Tables tables;
  json processes = json::array();
  for (const ProcessSnapshot& p : job.processes) {
    json proc = process_to_json(p, &tables);
    for (json& t : proc["threads"]) prune(t);
    prune(proc);
    processes.push_back(std::move(proc));
  }
  // Reuse the hangscan/1 top level (job_id, unreachable, diagnostics) and swap in the tables.
  JobSnapshot top;
  top.job_id = job.job_id;
  top.expected_world_size = job.expected_world_size;
  top.diagnostics = job.diagnostics;
  top.unreachable = job.unreachable;
  top.deaths = job.deaths;
  json doc = job_to_json(top, nullptr);
  for (const char* k : {"groups", "suspects", "suspect_reasons", "suspect_members", "missing_ranks",
                        "notes", "findings", "grouping"}) {
    doc.erase(k);
  }
  doc["schema"] = kAgentSchemaName;
  doc["agent_version"] = std::string(hangscan_version());
  doc["agent_commit"] = std::string(hangscan_commit());
  doc["strings"] = tables.strings();
  doc["frames"] = tables.frames();
  doc["stacks"] = tables.stacks();
  doc["processes"] = std::move(processes);
  return doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

// Reads the top-level "agent_version" and "agent_commit" strings and stops as soon as both are
// known (nlohmann's object keys are sorted, so they are the first two of the document).
class VersionPeek : public nlohmann::json_sax<json> {
 public:
  AgentVersion found;

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool binary(binary_t&) override { return scalar(); }
  bool string(string_t& val) override {
    if (depth_ == 1 && key_ == "agent_version") found.version = val;
    if (depth_ == 1 && key_ == "agent_commit") found.commit = val;
    key_.clear();
    return found.version.empty() || found.commit.empty();
  }
  bool start_object(std::size_t) override { return open(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& val) override {
    if (depth_ == 1) key_ = val;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool scalar() {
    key_.clear();
    return true;
  }
  bool open() {
    ++depth_;
    key_.clear();
    return true;
  }
  bool close() { return --depth_ > 0; }  // the end of the top-level object: nothing more to find

  int depth_ = 0;
  std::string key_;
};

}  // namespace

AgentVersion agent_document_version(std::string_view document) {
  VersionPeek peek;
  json::sax_parse(document.begin(), document.end(), &peek, nlohmann::detail::input_format_t::json,
                  false);
  return peek.found;
}

std::string agent_version_mismatch(const AgentVersion& agent) {
  if (agent.version == hangscan_version()) return {};
  const std::string theirs = agent.version.empty()
                                 ? std::string("an older hangscan (its answer names no version)")
                                 : fmt::format("hangscan {} (commit {})", agent.version,
                                               agent.commit.empty() ? "unknown" : agent.commit);
  return fmt::format(
      "the agent there is {}, this front end is {}: answer not used (install the same hangscan "
      "on every node, or pass --agent-path to a copy of this version; 'hangscan doctor "
      "--agent-path PATH' on the node checks it)",
      theirs, fmt::format("hangscan {} (commit {})", hangscan_version(), hangscan_commit()));
}

JobSnapshot merge_job_snapshots(std::vector<JobSnapshot> parts) {
  JobSnapshot out;
  std::size_t n = 0;
  for (const JobSnapshot& p : parts) n += p.processes.size();
  out.processes.reserve(n);
  // Nodes of one job send the same stacks: one copy of each for the whole job.
  StackTable stacks;
  for (JobSnapshot& p : parts) {
    stacks.intern_job(p);
    for (ProcessSnapshot& proc : p.processes) out.processes.push_back(std::move(proc));
    for (Diagnostic& d : p.diagnostics) out.diagnostics.push_back(std::move(d));
    for (UnreachableNode& u : p.unreachable) out.unreachable.push_back(std::move(u));
    for (Death& d : p.deaths) out.deaths.push_back(std::move(d));
    if (p.expected_world_size &&
        (!out.expected_world_size || *p.expected_world_size > *out.expected_world_size)) {
      out.expected_world_size = p.expected_world_size;
    }
    if (out.job_id.empty()) out.job_id = p.job_id;
  }
  link_wait_edges(out);
  return out;
}

}  // namespace hangscan
