#include "fanout/agent_framing.h"

#include <fmt/core.h>

#include <algorithm>

#include "fanout/hostlist.h"
#include "util/parse_number.h"

namespace hangscan {

namespace {

constexpr std::size_t kMaxNoiseLines = 8;
constexpr std::size_t kMaxNoiseChars = 300;
constexpr std::size_t kMaxReasonChars = 500;

std::string printable(std::string_view s, std::size_t max) {
  std::string out;
  for (char c : s.substr(0, max))
    out += (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) ? c : '?';
  if (s.size() > max) out += "...";
  return out;
}

// Splits off the first word of `s` (separated by one space).
std::string_view next_word(std::string_view& s) {
  std::size_t sp = s.find(' ');
  std::string_view w = s.substr(0, sp);
  s = sp == std::string_view::npos ? std::string_view{} : s.substr(sp + 1);
  return w;
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

}  // namespace

std::string frame_hash(std::string_view data) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", h);
}

std::string frame_begin(std::string_view node) {
  return fmt::format("{} begin {}\n", kFrameTag, node);
}

std::string frame_document(std::string_view node, std::string_view document) {
  std::string doc(document);
  std::replace_if(
      doc.begin(), doc.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  std::string out;
  out.reserve(doc.size() + doc.size() / kFrameChunk * 16 + 100);
  std::size_t pos = 0;
  while (pos < doc.size()) {
    std::size_t n = std::min(kFrameChunk, doc.size() - pos);
    // Never end a line on whitespace: some remote shells and relays strip trailing blanks.
    while (n > 1 && pos + n < doc.size() && is_space(doc[pos + n - 1])) --n;
    out += kFrameTag;
    out += " d ";
    out.append(doc, pos, n);
    out += '\n';
    pos += n;
  }
  out += fmt::format("{} end {} {} {}\n", kFrameTag, node, doc.size(), frame_hash(doc));
  return out;
}

std::string frame_failure(std::string_view node, std::string_view reason) {
  return fmt::format("{} fail {} {}\n", kFrameTag, node, printable(reason, kMaxReasonChars));
}

std::vector<std::string_view> output_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
  }
  return lines;
}

std::string last_output_line(std::string_view text) {
  auto lines = output_lines(text);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    std::string_view l = *it;
    while (!l.empty() && is_space(l.front())) l.remove_prefix(1);
    while (!l.empty() && is_space(l.back())) l.remove_suffix(1);
    if (!l.empty()) return printable(l, 300);
  }
  return {};
}

bool split_srun_label(std::string_view line, std::string_view& task, std::string_view& payload) {
  std::size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  std::size_t start = i;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
  if (i == start || i - start > 9 || i >= line.size() || line[i] != ':') return false;
  task = line.substr(start, i - start);
  payload = line.substr(i + 1);
  if (!payload.empty() && payload[0] == ' ') payload.remove_prefix(1);
  return true;
}

bool split_pdsh_label(std::string_view line, std::string_view& host, std::string_view& payload) {
  std::size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  host = line.substr(0, colon);
  if (!validate_host_name(host)) return false;
  payload = line.substr(colon + 1);
  if (!payload.empty() && payload[0] == ' ') payload.remove_prefix(1);
  return true;
}

FrameCollector::FrameCollector(std::size_t max_document_bytes)
    : max_document_bytes_(max_document_bytes) {}

NodeOutput& FrameCollector::stream(std::string_view key) {
  auto it = index_.find(key);
  if (it != index_.end()) return outputs_[it->second];
  index_.emplace(std::string(key), outputs_.size());
  NodeOutput out;
  out.stream = std::string(key);
  outputs_.push_back(std::move(out));
  return outputs_.back();
}

void FrameCollector::fail(NodeOutput& out, std::string reason) {
  if (out.state != NodeOutput::State::failed && out.state != NodeOutput::State::complete) {
    ++finished_;
    ++failed_;
  }
  out.state = NodeOutput::State::failed;
  out.document.clear();
  out.document.shrink_to_fit();
  out.reason = std::move(reason);
}

void FrameCollector::add_srun_line(std::string_view line) {
  std::string_view task, payload;
  if (split_srun_label(line, task, payload)) add_line(task, payload);
}

void FrameCollector::add_pdsh_line(std::string_view line) {
  std::string_view host, payload;
  if (split_pdsh_label(line, host, payload)) add_line(host, payload);
}

void FrameCollector::add_line(std::string_view key, std::string_view payload) {
  NodeOutput& out = stream(key);
  using State = NodeOutput::State;
  if (payload.size() <= kFrameTag.size() || payload.substr(0, kFrameTag.size()) != kFrameTag ||
      payload[kFrameTag.size()] != ' ') {
    if (out.noise.size() < kMaxNoiseLines) out.noise.push_back(printable(payload, kMaxNoiseChars));
    return;
  }
  std::string_view rest = payload.substr(kFrameTag.size() + 1);
  std::string_view verb = next_word(rest);
  if (out.state == State::complete || out.state == State::failed) return;  // first verdict stands

  if (verb == "d") {
    if (out.state != State::begun) return fail(out, "agent data before its begin line");
    if (out.document.size() + rest.size() > max_document_bytes_) {
      return fail(out, fmt::format("agent document larger than the limit of {} bytes",
                                   max_document_bytes_));
    }
    out.document.append(rest);
    return;
  }
  if (verb == "begin") {
    if (out.state == State::begun)
      return fail(out, "agent started a second document before ending the first");
    if (!validate_host_name(rest))
      return fail(out, fmt::format("agent sent an invalid node name '{}'", printable(rest, 80)));
    out.node = std::string(rest);
    out.state = State::begun;
    return;
  }
  if (verb == "fail") {
    std::string_view node = next_word(rest);
    if (out.node.empty() && validate_host_name(node)) out.node = std::string(node);
    return fail(out, rest.empty() ? std::string("agent failed") : printable(rest, kMaxReasonChars));
  }
  if (verb == "end") {
    if (out.state != State::begun) return fail(out, "agent end line without a begin line");
    std::string_view node = next_word(rest);
    std::string_view bytes_text = next_word(rest);
    std::string_view hash = next_word(rest);
    auto bytes = parse_int<std::size_t>(bytes_text);
    if (node != out.node || !bytes || bytes_text != trim_space(bytes_text) || hash.empty()) {
      return fail(out, fmt::format("malformed agent end line '{}'", printable(payload, 120)));
    }
    if (*bytes != out.document.size()) {
      return fail(out, fmt::format("agent document damaged on the way: {} of {} bytes arrived",
                                   out.document.size(), *bytes));
    }
    if (hash != frame_hash(out.document))
      return fail(out, "agent document damaged on the way: checksum mismatch");
    out.state = State::complete;
    ++finished_;
    if (on_document_) on_document_(out.document);
    return;
  }
  if (out.noise.size() < kMaxNoiseLines) out.noise.push_back(printable(payload, kMaxNoiseChars));
}

std::vector<NodeOutput> FrameCollector::outputs() const { return outputs_; }

}  // namespace hangscan
