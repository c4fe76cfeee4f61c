// Findings: what analyze() found, as data (kind, members, frame references, figures).
//
// Why: a sentence is one rendering of a finding; a machine-readable verdict (JSON), an HTML view
// or a later rule must not re-derive who and where from prose. The rules (suspects.cpp,
// death_findings.cpp, roles.cpp, locals_split.cpp, wait_graph.cpp) fill these; the words are
// made apart from them, at the writers' edge (report/finding_words.h).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "group/stack_trie.h"
#include "hangscan/model.h"

namespace hangscan {

enum class FindingKind {
  divergence,      // members that left a clear majority's path (or have no stack)
  bad_state,       // members sharing one bad state: D (with wchan), T, t, Z, X
  death,           // a dead process, or a death from the kernel log, linked to a rank if known
  missing_ranks,   // ranks below the world size that no process has
  pool_straggler,  // a pool worker in user code while its siblings are idle or dead
  locals_split,    // one stack, but a minority value of a scalar local
  pool_wait,       // a pool owner waits for its straggling worker(s)
  wait_chain,      // processes that wait (a chain or a fan-in) on one that waits on none of them
  wait_cycle,      // processes that wait on each other and on nothing outside
  deadlock,        // a cycle of wait edges: threads of one process, or processes through a child
  // Notes: verdicts that name no suspect (Analysis::note_findings).
  incomplete_stack,        // members whose stack stopped unwinding early: not named for it
  same_stack,              // every grouped member has the same stack
  no_majority,             // no branch below a frame holds a clear majority: no suspect named
  implausible_world_size,  // a world size too large to list the missing ranks of
  locals_hint,             // one Python stack for all, no locals read: --locals may split them
  invalid_thread_regex,    // --thread-regex does not compile: no thread selected
};

// A frame a finding points at: a member's own frame in the JobSnapshot, or a node of the
// analysis's trie (the frame its first member brought). Why both: a sentence shows the member's
// own line where the rule had it, the trie's key frame where it spoke of a shared place.
struct FrameRef {
  static constexpr std::size_t kNoNode = static_cast<std::size_t>(-1);
  const Frame* frame = nullptr;
  std::size_t node = kNoNode;
};

// The frame `r` refers to; nullptr for an empty reference.
inline const Frame* resolve(const StackTrie& trie, const FrameRef& r) {
  if (r.frame) return r.frame;
  return r.node < trie.nodes().size() ? &trie.node(r.node).frame : nullptr;
}

struct Finding {
  FindingKind kind = FindingKind::divergence;
  // The processes named (indexes into JobSnapshot::processes): sorted, except a wait chain's
  // (in chain order when `flag`), a death's (the dead process, if captured) and a deadlock's
  // (one per step of the cycle: the same process again for threads of one process).
  std::vector<std::size_t> members;
  // The other party: divergence and locals_split: the majority; death: the largest living
  // group; pool_straggler: its dead siblings; pool_wait: the waited workers; wait_chain: the root.
  std::vector<std::size_t> others;
  std::vector<int> ranks;           // missing_ranks: the ranks; death: ranks missing and not linked
  std::optional<int> rank;          // death: the rank the dead process was (its own, or linked)
  std::vector<FrameRef> frames;     // where the members are, in the order said (see below)
  FrameRef place;                   // where the others are (divergence, death, locals_split)
  std::size_t gap_before = kNoGap;  // divergence: frames left out before frames[gap_before]
  std::vector<std::string> hosts;   // hosts of the members, when the job spans several
  std::string host;              // pool_straggler: the pool's host (for members without their own);
                                 // death: the dead process's host when the job spans several
  bool flag = false;             // pool_straggler: the only worker; death: linked to its rank;
                                 // wait_chain: a chain (members ordered) rather than a fan-in
  char state = 0;                // bad_state: the state letter
  std::string wchan;             // bad_state D: where in the kernel
  std::optional<Death> death;    // death: what the node found (host filled in)
  std::optional<int> zombie_of;  // death: the parent that has not reaped the zombie
  // death: the launcher ending the others, as its log says ("torchrun", "SIGTERM", the line's
  // time if printed, "torchrun.err:12"); set by logs (--logs), so "wait for it" is not said.
  struct Stop {
    std::string by, signal, source;
    std::optional<double> at;
  };
  std::optional<Stop> stopped;
  // death: how its rank is known (none: not linked). own: the dead process's own rank (as
  // discovery read it); launcher: its pid in its launcher's own list of workers (local rank)
  // and its siblings' RANK - LOCAL_RANK; only_missing: the only dead process meeting the only
  // missing rank (an inference); log: a log line naming its pid with its rank (--logs).
  enum class RankFrom { none, own, launcher, only_missing, log };
  RankFrom rank_from = RankFrom::none;
  std::optional<std::size_t> owner;  // pool_straggler: the owner's process index, if captured
  int owner_pid = 0;                 // pool_straggler: the owner's pid
  std::size_t idle = 0;              // pool_straggler: idle siblings
  std::size_t busy = 0;              // pool_straggler: other busy siblings
  int world_size = 0;                // missing_ranks
  std::string local, value, majority_value;  // locals_split: name and the two values;
                                             // invalid_thread_regex: `value` is the regex
  std::size_t count = 0;  // same_stack: the grouped members; no_majority: the branches
  // no_majority: each branch's members (sorted), frames[i] its frame (the node they part below
  // again when the branch's stacks end there); place: that node, empty for the root.
  std::vector<std::vector<std::size_t>> parts;
  // deadlock: members[i] (thread tids[i]) waits on members[i + 1] by via[i], the last on the
  // first; flag: processes (a wait for a child in the cycle) rather than threads of one process.
  std::vector<int> tids;
  std::vector<const WaitEdge*> via;

  static constexpr std::size_t kNoGap = static_cast<std::size_t>(-1);
};

// The trie node a no_majority finding's branches part below (its place; the root when empty).
inline std::size_t parting_node(const Finding& f) {
  return f.place.node == FrameRef::kNoNode ? StackTrie::kRoot : f.place.node;
}

// Frames of a divergence: [the frame where the members parted (when not at the root)], the first
// frame after it, and the deepest Python frame below (gap_before marks frames left out); none
// when the members have no stack. Of a pool straggler or pool wait: the user's frame and, when
// it called into a library, the innermost frame. Of a locals split: the frame holding the local.
// Of an incomplete stack: the frame where unwinding stopped (none when it has no frame).

// The name of a FindingKind in documents ("divergence", "bad_state", ...).
inline const char* finding_kind_name(FindingKind k) {
  switch (k) {
    case FindingKind::divergence:
      return "divergence";
    case FindingKind::bad_state:
      return "bad_state";
    case FindingKind::death:
      return "death";
    case FindingKind::missing_ranks:
      return "missing_ranks";
    case FindingKind::pool_straggler:
      return "pool_straggler";
    case FindingKind::locals_split:
      return "locals_split";
    case FindingKind::pool_wait:
      return "pool_wait";
    case FindingKind::wait_chain:
      return "wait_chain";
    case FindingKind::wait_cycle:
      return "wait_cycle";
    case FindingKind::deadlock:
      return "deadlock";
    case FindingKind::incomplete_stack:
      return "incomplete_stack";
    case FindingKind::same_stack:
      return "same_stack";
    case FindingKind::no_majority:
      return "no_majority";
    case FindingKind::implausible_world_size:
      return "implausible_world_size";
    case FindingKind::locals_hint:
      return "locals_hint";
    case FindingKind::invalid_thread_regex:
      return "invalid_thread_regex";
  }
  return "divergence";
}

}  // namespace hangscan
