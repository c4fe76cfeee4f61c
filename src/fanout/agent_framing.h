// Framing of agent documents on a shared, line-oriented channel (srun --label, pdsh).
//
// Why: srun and pdsh merge the output of every node into one stream, line by line and in any
// order, and both cut long lines (srun --label re-labels every 1,024 bytes). An agent therefore
// never prints its JSON document as is: it prints tagged lines of at most ~900 bytes between a
// `begin NODE` and an `end NODE BYTES HASH` line. The front end keys lines by their source
// (srun task label or pdsh host), reassembles each document exactly, and can tell a node that
// never started, one that died mid-document (begin without end), one whose bytes were damaged
// (size or hash mismatch) and one that reported a failure (`fail NODE REASON`). Stray lines
// (a motd, a remote-setup script's chatter) are kept, bounded, as evidence for the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace hangscan {

inline constexpr std::string_view kFrameTag = "HSAGENT1";
inline constexpr std::size_t kFrameChunk = 900;  // payload bytes per data line

// The lines an agent prints (each ends with '\n'). `node` must be a valid host name.
std::string frame_begin(std::string_view node);
// Data lines and the end line for `document` (newlines in it become spaces: JSON allows that).
std::string frame_document(std::string_view node, std::string_view document);
std::string frame_failure(std::string_view node, std::string_view reason);

// FNV-1a 64-bit, as hex: detects damage on the way, not an attacker.
std::string frame_hash(std::string_view data);

// What one source (srun task, pdsh host) delivered.
struct NodeOutput {
  enum class State { silent, begun, complete, failed };
  std::string stream;  // srun task id or pdsh host
  std::string node;    // from the begin line; "" if none came
  State state = State::silent;
  std::string document;            // complete: the reassembled document
  std::string reason;              // failed: why (agent's own reason or a framing error)
  std::vector<std::string> noise;  // other lines of this source (bounded)
};

// Collects framed lines from the merged output of many agents.
class FrameCollector {
 public:
  explicit FrameCollector(std::size_t max_document_bytes = std::size_t{256} << 20);

  // One line of `srun --label` output ("  3: text"); unlabeled lines are ignored.
  void add_srun_line(std::string_view line);
  // One line of pdsh output ("host: text").
  void add_pdsh_line(std::string_view line);
  // One line whose source is already known.
  void add_line(std::string_view stream, std::string_view payload);

  // Sources that delivered a complete document or a failure so far (for progress).
  std::size_t finished() const { return finished_; }
  // Of those, the ones that failed.
  std::size_t failed() const { return failed_; }
  // Called with each document the moment it is complete and its checksum matches.
  void on_document(std::function<void(const std::string&)> fn) { on_document_ = std::move(fn); }

  // Every source seen, in order of first appearance.
  std::vector<NodeOutput> outputs() const;

 private:
  NodeOutput& stream(std::string_view key);
  void fail(NodeOutput& out, std::string reason);

  std::size_t max_document_bytes_;
  std::size_t finished_ = 0;
  std::size_t failed_ = 0;
  std::function<void(const std::string&)> on_document_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::vector<NodeOutput> outputs_;
};

// The lines of a captured output ('\n' or "\r\n"), without the line ends.
std::vector<std::string_view> output_lines(std::string_view text);
// The last line with something on it, trimmed and cut to 300 bytes ("" if none): what a user
// needs to see of a tool that failed.
std::string last_output_line(std::string_view text);

// Splits a labeled line into (source, payload); false when the line has no label.
bool split_srun_label(std::string_view line, std::string_view& task, std::string_view& payload);
bool split_pdsh_label(std::string_view line, std::string_view& host, std::string_view& payload);

}  // namespace hangscan
