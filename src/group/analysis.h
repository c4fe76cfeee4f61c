// analyze(): ranks grouped by stack, and the odd ones out named with a reason.
//
// Why: the question an operator asks of a hung job is "which rank is not where the others are,
// and where is it". This is the one place that answers it, for one node or a merged cluster,
// from a JobSnapshot alone (no I/O), so every mode and every writer reports the same verdict.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "group/finding.h"
#include "group/stack_key.h"
#include "group/stack_trie.h"
#include "group/wait_spread.h"
#include "hangscan/model.h"

namespace hangscan {

// A rank's last words beside its stack (`--logs`, src/logs/log_join.h). Why here: the capture's
// writers (text, JSON, HTML) show it with the verdict; the CLI fills it after analyze().
struct RankLastLog {
  int rank = 0;
  std::string file;  // as found (a path the user named, or under one)
  std::uint64_t line = 0;
  std::string kind;                        // the event's kind, or "last_line" (recognised or not)
  std::string text;                        // the line, as the job wrote it (cut)
  std::optional<double> before_capture_s;  // the capture's time minus the line's
  std::string where;  // the rank's main thread: "load_batch (data.py:88)"; "" not captured
};

// An equivalence class: processes whose selected threads have the same key.
struct Group {
  std::vector<int> ranks;            // sorted; members without rank are not listed here
  std::vector<int> pids;             // in member order
  std::vector<std::string> hosts;    // distinct, sorted
  std::vector<std::size_t> members;  // indexes into JobSnapshot::processes, by (rank, host, pid)
  bool suspect = false;
  std::vector<Frame> frames;            // the key (first selected thread), innermost first
  std::size_t node = StackTrie::kRoot;  // trie node the key ends on
  std::optional<WaitSpread> wait;       // since when the members wait (all blocked, >= 2)
};

// What analyze() found, as data: no sentences (the writers make them, report/finding_words.h).
struct Analysis {
  GroupOptions options;
  std::vector<Group> groups;                 // smallest first, ties by lowest rank / pid
  std::vector<int> suspects;                 // ranks, sorted (includes missing ranks)
  std::vector<Finding> findings;             // the suspect rules' findings
  std::vector<int> missing_ranks;            // by world size, sorted
  std::vector<std::size_t> suspect_members;  // process indexes, sorted (ranked or not)
  std::vector<std::size_t> grouped;          // process indexes that were grouped, ascending
  std::vector<std::size_t> group_of;         // per process: index into groups, or kNoGroup
  std::vector<Finding> note_findings;        // verdicts that name no suspect
  std::vector<Finding> wait_findings;        // who waits on whom (group/wait_graph.h), evidence
  std::vector<Finding> deadlock_findings;    // cycles of waits (group/deadlock.h)
  std::optional<int> world_size;             // expected or largest world_size seen
  std::vector<RankLastLog> last_logs;        // with --logs: one per rank with a log, by rank
  // With --logs: the logs' own verdict, in the words of the logs module (logs/log_writers.h),
  // which reads the job's logs after analyze().
  std::vector<std::string> log_verdict;
  StackTrie trie;

  static constexpr std::size_t kNoGroup = static_cast<std::size_t>(-1);
  bool is_suspect(std::size_t process_index) const;
};

// Groups the job's ranks (processes with role "rank"; when there are none, processes with an
// empty role or role "process") and names suspects. Launchers and helpers are not grouped.
Analysis analyze(const JobSnapshot& job, const GroupOptions& opts);

// True for the processes analyze() groups.
bool is_groupable(const ProcessSnapshot& p, bool job_has_ranks);

// The state that matters for a process: its main thread's, else the process's.
char main_state(const ProcessSnapshot& p);

}  // namespace hangscan
