// Synthetic jobs for benchmarks: N ranks in K stack classes, D frames deep, spread over hosts.
//
// Why: grouping and merging must stay fast at 100,000 ranks, which no test machine can run
// for real. The generator makes jobs with a known answer (which ranks are the odd ones), so
// the benchmark also checks that it got the answer right, not only that it was fast.
#pragma once

#include <cstddef>
#include <vector>

#include "hangscan/model.h"

namespace hangscan::bench {

struct SynthOptions {
  int ranks = 100000;
  int classes = 5;             // class 0 is the majority; class k >= 1 has about ranks / 10^(k+1)
  int depth = 60;              // frames in every main-thread stack
  int ranks_per_host = 8;      // host name "node00042"
  bool helper_thread = false;  // add a second thread per rank (differs per rank)
};

// The class of every rank (index = rank).
std::vector<int> synth_classes(const SynthOptions& o);

// Ranks [first, first + count) of the synthetic job (one host's worth, or the whole job).
JobSnapshot make_synthetic_job(const SynthOptions& o, int first, int count);
inline JobSnapshot make_synthetic_job(const SynthOptions& o) {
  return make_synthetic_job(o, 0, o.ranks);
}

// How many ranks are not in class 0: what analyze() must name as suspects.
std::size_t synth_minority_count(const SynthOptions& o);

// The HTML report's benchmark job (issue 34): `ranks` ranks of `threads` threads each, filled
// as a real dump fills them (names, states, calls, blocked times, memory, command lines), in
// `stacks` distinct stacks: threads - 1 helper stacks and the rest main-thread stacks, one of
// them held by every rank but the few that each stand in one of the others.
struct PageJobOptions {
  int ranks = 10000;
  int threads = 8;
  int stacks = 200;
  int depth = 30;  // frames of the main thread's stacks
};
JobSnapshot make_page_job(const PageJobOptions& o);
// The ranks that are not in the majority's main-thread stack.
std::size_t page_job_odd_ranks(const PageJobOptions& o);

}  // namespace hangscan::bench
