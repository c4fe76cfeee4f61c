// From what the agents sent to per-node documents, snapshots and unreachable nodes.
//
// Why: srun and pdsh differ in how agents are started and how their output is labeled, but
// not in what happens afterwards: each source's framed output is either a complete document
// (for the capture round it is read as a snapshot and every process in it is stamped with the
// node it came from; the core round reads its own kind), or a reason why the node gave
// nothing usable. Partial results are the normal case at scale, so a node's failure
// is data (UnreachableNode), never an error of the whole run.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fanout/agent_framing.h"
#include "hangscan/model.h"
#include "report/json_reader.h"

namespace hangscan {

// How many nodes have answered so far, and how many failed for good.
struct NodeProgress {
  std::size_t answered = 0;
  std::size_t unreachable = 0;
  std::size_t total = 0;
};

// "7,912/10,000 nodes answered, 3 unreachable": the line the CLI shows on a terminal.
std::string progress_line(const NodeProgress& p);

// What a launcher tells the front end while nodes answer; either member may be empty.
// Why: the front end shows progress on a terminal and reads each document as it arrives
// (EarlyReader), so that the job is ready when the last node answers.
struct AnswerWatch {
  std::function<void(const NodeProgress&)> progress;
  std::function<void(const std::string& document)> document;  // each complete document
};

// The agent gets less time than the front end, so that it answers with what it has before
// srun or pdsh is killed: a quarter of the time, at most 5 s, is left for start-up and transfer.
std::chrono::milliseconds agent_timeout_for(std::chrono::milliseconds total);

// What came back from one node. The document is not read here: the capture round and the
// core round (hangscan --gcore) send different documents through the same relays.
struct NodeVerdict {
  std::string node;
  std::string agent_node;               // the name the agent gave itself (its begin line)
  std::optional<std::string> document;  // set when a complete, checksummed document arrived
  std::string reason;                   // otherwise: why not
  bool started = false;                 // the agent printed its begin line
  bool definite = false;                // answered or failed for good: asking again is useless
};

// How a source is tied to a node: srun labels are task numbers, so the node is the one the
// agent names in its begin line; pdsh labels are the host names the user gave.
enum class NodeKey { begin_line, stream };

// Sorts every source's output into verdicts (one per source that names a node).
std::vector<NodeVerdict> decode_outputs(const std::vector<NodeOutput>& outputs, NodeKey key);

// One node's complete document, still unread.
struct NodeDocument {
  std::string node;        // as asked (Slurm node name, pdsh host)
  std::string agent_node;  // as the agent named itself: differs over ssh (pdsh -w 10.0.0.7)
  std::string text;
};

// What a round of agents sent: documents of the nodes that answered, in the order asked,
// and the other nodes with reasons.
struct AgentAnswers {
  std::vector<std::string> requested;
  std::vector<NodeDocument> documents;
  std::vector<UnreachableNode> unreachable;
  std::vector<Diagnostic> diagnostics;  // answers from nodes nobody asked, run problems
  std::vector<std::string> log;         // commands run and their timing, for --verbose
  std::chrono::milliseconds elapsed{0};
};

// The result of a capture fan-out: answered nodes in the order asked, and the rest with reasons.
struct FanoutResult {
  std::vector<std::string> requested;
  std::vector<std::pair<std::string, JobSnapshot>> nodes;
  std::map<std::string, std::string> agent_nodes;  // node as asked -> the agent's own name
  std::vector<UnreachableNode> unreachable;
  std::vector<Diagnostic> diagnostics;  // answers from nodes nobody asked, run problems
  std::vector<std::string> log;         // commands run and their timing, for --verbose
  std::chrono::milliseconds elapsed{0};

  // One job over every answered node, with the unreachable nodes and diagnostics added.
  JobSnapshot merged(const std::string& job_id = {},
                     std::optional<int> expected_world_size = {}) const;
};

// Reads capture documents: processes and diagnostics get `host` = the node as asked; a
// document that does not read makes its node unreachable ("bad agent document: ...").
// `early` (may be null) holds documents already read while nodes answered.
class EarlyReader;
FanoutResult read_job_answers(AgentAnswers answers, const ReadLimits& limits = {},
                              EarlyReader* early = nullptr);

// Collects verdicts across rounds (srun is retried without nodes that failed to launch).
class VerdictBook {
 public:
  explicit VerdictBook(std::vector<std::string> requested);

  // Records the verdicts of one round; answers from nodes not asked become diagnostics.
  void record(std::vector<NodeVerdict> verdicts);
  // Sets the reason for a node that has no answer (the latest reason wins).
  void note_failure(const std::string& node, std::string reason);
  // Nodes without a document and without a definite failure, in the order asked.
  std::vector<std::string> pending() const;
  std::size_t answered() const { return answered_; }
  std::size_t settled() const;

  // Nodes without an answer become unreachable with their reason, or `default_reason`.
  AgentAnswers finish(const std::string& default_reason) &&;
  // The same at the end of a fan-out: the default reason says whether the deadline passed.
  AgentAnswers finish(bool timed_out, std::chrono::milliseconds timeout,
                      std::vector<std::string> log,
                      std::chrono::steady_clock::time_point started) &&;

 private:
  std::vector<std::string> requested_;
  std::map<std::string, NodeVerdict> verdicts_;
  std::map<std::string, std::string> failures_;  // definite: do not ask again
  std::vector<Diagnostic> diagnostics_;
  std::size_t answered_ = 0;
};

}  // namespace hangscan
