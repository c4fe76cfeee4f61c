// EarlySuspects: the first odd ranks, named while the other nodes are still answering.
//
// Why: at 10,000 nodes the operator waits for the slowest node before the report; when a few
// ranks already stand clearly apart from the rest (a rank in a recv while every other one is in
// the all-reduce), saying so early lets them start looking. It is a guess from the documents
// read so far, keyed on the main thread's stack (shared stacks compare by identity), and says
// so ("early:"); the report after the last node is the answer.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hangscan/model.h"

namespace hangscan {

// An odd group named early, as data; its words ("early: rank 17 (node n4) differs: in recv
// (/t/x.py:88); 79 of 80 ranks read so far are in all_reduce (/t/c10d.py:1541)") are made at
// the edge (early_note_words(), fanout/terminal_progress.h).
struct EarlyNote {
  std::size_t members = 0;     // ranks in the odd group
  int first_rank = 0;          // its lowest-read rank
  std::string first_host;      // that rank's node; empty: not known
  std::optional<Frame> where;  // the odd group's innermost frame; none: no stack
  std::size_t majority = 0;    // ranks in the largest group
  std::optional<Frame> majority_where;
  std::size_t ranks_read = 0;  // ranks read so far
};

class EarlySuspects {
 public:
  // Defaults: at least 8 ranks read, the largest group holds >= 75% of them, an odd group
  // holds at most 5% (at least one rank), and at most 3 notes in all.
  struct Rules {
    std::size_t min_ranks = 8;
    double majority = 0.75;
    double odd_share = 0.05;
    std::size_t max_notes = 3;
  };
  EarlySuspects() = default;
  explicit EarlySuspects(Rules rules) : rules_(rules) {}

  // Adds the ranks of one node's document; returns the new notes (each odd stack once). The
  // documents' stacks must outlive this object (a run's stack table holds them): groups are
  // keyed by stack identity. Not thread-safe.
  std::vector<EarlyNote> add(const JobSnapshot& doc);

 private:
  struct Group {
    std::size_t members = 0;
    int first_rank = 0;
    std::string first_host;
    std::optional<Frame> where;  // the innermost frame; none: no stack
    bool noted = false;
  };

  Rules rules_;
  std::unordered_map<const void*, Group> groups_;  // by the main thread's stack id
  std::size_t ranks_ = 0;
  std::size_t notes_ = 0;
};

}  // namespace hangscan
