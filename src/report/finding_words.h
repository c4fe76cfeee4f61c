// The words for findings: one sentence per Finding (group/finding.h), made in this one place.
//
// Why: the engine returns data (analyze(): findings, wait findings, deadlock findings, notes);
// every writer (text, JSON's "suspect_reasons", "notes", "wait_chains" and "deadlocks", HTML
// through the JSON, the watch verdict) shows the same sentence for the same finding, so the
// sentences are made once, here at the writers' edge, never inside a rule. The order of the
// words is the order of the findings: the words of a.findings[i] are suspect_reasons[i].
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "group/analysis.h"
#include "group/finding.h"
#include "group/stack_trie.h"
#include "hangscan/model.h"

namespace hangscan {

// "rank 2 is not in all_reduce with ranks 0-1,3: it is in train (job.py:19) -> load_batch",
// "ranks 2-3 are missing: ...", "n1:100 waits for its worker n1:104, in work (pool.py:29)".
// `trie` resolves the finding's trie references (an empty trie when it has none).
std::string finding_sentence(const JobSnapshot& job, const StackTrie& trie, const Finding& f);

std::vector<std::string> finding_sentences(const JobSnapshot& job, const StackTrie& trie,
                                           const std::vector<Finding>& findings);

// The verdict in words, each list in the order of its findings.
struct VerdictWords {
  // a.findings' words (with --logs, a sentence about one rank ends with that rank's last log),
  // then with --logs: "rank 3's last log: ..." for a suspect rank no sentence is about, and the
  // logs' own verdict as "logs: ..." sentences.
  std::vector<std::string> suspect_reasons;
  std::vector<std::string> notes;        // a.note_findings' words
  std::vector<std::string> wait_chains;  // a.wait_findings' words
  std::vector<std::string> deadlocks;    // a.deadlock_findings' words
};
VerdictWords verdict_words(const JobSnapshot& job, const Analysis& a);

// The words of a.findings[i], as suspect_reasons[i] of verdict_words() (for links from a
// verdict line to its finding).
std::string suspect_words(const JobSnapshot& job, const Analysis& a, std::size_t i);

// "last log: "LINE" (FILE:N, 12 s before the dump)": a rank's last words (logs/log_join.h).
std::string last_log_words(const RankLastLog& l);

}  // namespace hangscan
