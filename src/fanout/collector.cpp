#include "fanout/collector.h"

#include <fmt/core.h>

#include <algorithm>

#include "fanout/early_reader.h"
#include "report/agent_format.h"
#include "util/diagnostic.h"

namespace hangscan {

namespace {

// A short reason from lines the agent printed besides its frames (a remote shell error, a
// "command not found"). An agent's own error ends with its "hint:" line: the line before it
// says what went wrong, so both are kept.
std::string noise_reason(const NodeOutput& out) {
  if (out.noise.empty()) return {};
  const std::string& last = out.noise.back();
  if (last.starts_with("hint:") && out.noise.size() >= 2)
    return fmt::format("agent printed: {}; {}", out.noise[out.noise.size() - 2], last);
  return fmt::format("agent printed: {}", last);
}

void stamp_host(JobSnapshot& job, const std::string& node) {
  for (auto& p : job.processes) {
    p.host = node;
    for (auto& d : p.diagnostics) d.host = node;
  }
  for (auto& d : job.diagnostics) {
    if (d.host.empty()) d.host = node;
  }
  // A node's agent cannot speak for other nodes.
  job.unreachable.clear();
}

}  // namespace

std::chrono::milliseconds agent_timeout_for(std::chrono::milliseconds total) {
  using namespace std::chrono_literals;
  auto margin = std::min<std::chrono::milliseconds>(total / 4, 5s);
  return std::max<std::chrono::milliseconds>(total - margin, 500ms);
}

std::vector<NodeVerdict> decode_outputs(const std::vector<NodeOutput>& outputs, NodeKey key) {
  std::vector<NodeVerdict> verdicts;
  for (const auto& out : outputs) {
    NodeVerdict v;
    v.node = key == NodeKey::stream ? out.stream : out.node;
    if (v.node.empty()) continue;  // srun: a task that never said which node it is on
    v.agent_node = out.node.empty() ? v.node : out.node;
    v.started = out.state != NodeOutput::State::silent;
    switch (out.state) {
      case NodeOutput::State::complete:
        v.definite = true;
        v.document = out.document;
        break;
      case NodeOutput::State::failed:
        v.definite = true;
        v.reason = out.reason;
        break;
      case NodeOutput::State::begun:
        v.reason = "agent started but its document did not arrive complete";
        if (auto n = noise_reason(out); !n.empty()) v.reason += "; " + n;
        break;
      case NodeOutput::State::silent:
        v.reason = noise_reason(out);
        if (v.reason.empty()) v.reason = "no answer";
        break;
    }
    verdicts.push_back(std::move(v));
  }
  return verdicts;
}

std::string progress_line(const NodeProgress& p) {
  auto grouped = [](std::size_t n) {
    std::string digits = std::to_string(n), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
      if (i && (digits.size() - i) % 3 == 0) out += ',';
      out += digits[i];
    }
    return out;
  };
  std::string line = fmt::format("{}/{} nodes answered", grouped(p.answered), grouped(p.total));
  if (p.unreachable) line += fmt::format(", {} unreachable", grouped(p.unreachable));
  return line;
}

FanoutResult read_job_answers(AgentAnswers answers, const ReadLimits& limits, EarlyReader* early) {
  FanoutResult r;
  r.requested = std::move(answers.requested);
  r.unreachable = std::move(answers.unreachable);
  r.diagnostics = std::move(answers.diagnostics);
  r.log = std::move(answers.log);
  r.elapsed = answers.elapsed;
  for (auto& doc : answers.documents) {
    // Another version's document may read as something else: the versions are compared first.
    // One that names no version and does not read is damage; one that reads is an old agent.
    const AgentVersion version = agent_document_version(doc.text);
    std::string mismatch = agent_version_mismatch(version);
    if (!mismatch.empty() && !version.version.empty()) {
      r.unreachable.push_back(UnreachableNode{doc.node, std::move(mismatch)});
      continue;
    }
    std::optional<Result<JobSnapshot>> read_early;
    if (early) read_early = early->take(doc.text);
    Result<JobSnapshot> job = read_early ? std::move(*read_early) : read_job_json(doc.text, limits);
    if (!job) {
      r.unreachable.push_back(
          UnreachableNode{doc.node, fmt::format("bad agent document: {}", job.error().what())});
      continue;
    }
    if (!mismatch.empty()) {
      r.unreachable.push_back(UnreachableNode{doc.node, std::move(mismatch)});
      continue;
    }
    stamp_host(*job, doc.node);
    r.agent_nodes[doc.node] = doc.agent_node;
    r.nodes.emplace_back(doc.node, std::move(*job));
  }
  // Keep the order asked, whichever way a node ended.
  auto position = [&](const std::string& node) {
    return std::find(r.requested.begin(), r.requested.end(), node) - r.requested.begin();
  };
  std::stable_sort(r.unreachable.begin(), r.unreachable.end(),
                   [&](const UnreachableNode& a, const UnreachableNode& b) {
                     return position(a.host) < position(b.host);
                   });
  return r;
}

JobSnapshot FanoutResult::merged(const std::string& job_id,
                                 std::optional<int> expected_world_size) const {
  std::vector<JobSnapshot> parts;
  parts.reserve(nodes.size());
  for (const auto& [node, snap] : nodes) parts.push_back(snap);
  JobSnapshot job = merge_job_snapshots(std::move(parts));
  for (const auto& u : unreachable) job.unreachable.push_back(u);
  for (const auto& d : diagnostics) job.diagnostics.push_back(d);
  if (!job_id.empty()) job.job_id = job_id;
  if (expected_world_size) job.expected_world_size = expected_world_size;
  return job;
}

VerdictBook::VerdictBook(std::vector<std::string> requested) : requested_(std::move(requested)) {}

void VerdictBook::record(std::vector<NodeVerdict> verdicts) {
  for (auto& v : verdicts) {
    if (std::find(requested_.begin(), requested_.end(), v.node) == requested_.end()) {
      diagnostics_.push_back(make_diagnostic(
          Diagnostic::Severity::warning,
          fmt::format("an answer came from node '{}', which was not asked: ignored", v.node)));
      continue;
    }
    auto it = verdicts_.find(v.node);
    if (it != verdicts_.end() && it->second.document) continue;  // already answered
    if (v.document) {
      ++answered_;
      failures_.erase(v.node);
    } else if (v.definite) {
      failures_[v.node] = v.reason;
    }
    verdicts_[v.node] = std::move(v);
  }
}

void VerdictBook::note_failure(const std::string& node, std::string reason) {
  auto it = verdicts_.find(node);
  if (it != verdicts_.end() && it->second.document) return;
  failures_[node] = std::move(reason);
}

std::vector<std::string> VerdictBook::pending() const {
  std::vector<std::string> out;
  for (const auto& n : requested_) {
    auto it = verdicts_.find(n);
    if (it != verdicts_.end() && it->second.document) continue;
    if (failures_.count(n) != 0) continue;
    out.push_back(n);
  }
  return out;
}

std::size_t VerdictBook::settled() const { return answered_ + failures_.size(); }

AgentAnswers VerdictBook::finish(const std::string& default_reason) && {
  AgentAnswers r;
  r.requested = requested_;
  r.diagnostics = std::move(diagnostics_);
  for (const auto& n : requested_) {
    auto it = verdicts_.find(n);
    if (it != verdicts_.end() && it->second.document) {
      r.documents.push_back(
          NodeDocument{n, it->second.agent_node, std::move(*it->second.document)});
      continue;
    }
    std::string reason;
    const bool has_soft_reason =
        it != verdicts_.end() && !it->second.definite && it->second.reason != "no answer";
    if (auto f = failures_.find(n); f != failures_.end()) {
      reason = f->second;
      // The node's own words (a remote shell error) say more than "exited with code 2".
      if (has_soft_reason && reason.find(it->second.reason) == std::string::npos) {
        reason += fmt::format(" ({})", it->second.reason);
      }
    } else if (it != verdicts_.end() && it->second.started) {
      reason = fmt::format("{} ({})", default_reason, it->second.reason);
    } else if (it != verdicts_.end() && it->second.reason != "no answer") {
      reason = fmt::format("{} ({})", default_reason, it->second.reason);
    } else {
      reason = default_reason;
    }
    r.unreachable.push_back(UnreachableNode{n, std::move(reason)});
  }
  return r;
}

AgentAnswers VerdictBook::finish(bool timed_out, std::chrono::milliseconds timeout,
                                 std::vector<std::string> log,
                                 std::chrono::steady_clock::time_point started) && {
  std::string default_reason =
      timed_out
          ? fmt::format("no answer within {} s", std::chrono::duration<double>(timeout).count())
          : "no answer";
  AgentAnswers result = std::move(*this).finish(default_reason);
  result.log = std::move(log);
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  return result;
}

}  // namespace hangscan
