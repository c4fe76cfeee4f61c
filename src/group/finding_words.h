// The words for findings: one sentence per Finding (group/finding.h), made in this one place.
//
// Why: the rules return data; every writer (text, JSON's "suspect_reasons" and "wait_chains",
// HTML, the watch verdict, `--logs`) shows the same sentence for the same finding, so the
// sentences are made once, here, from the finding and the job, never inside a rule. Why in
// src/group and not src/report: `logs` and the watch verdict take the sentences too, and the
// module map lets them include group but not report (docs/design.md); no rule includes this.
#pragma once

#include <string>
#include <vector>

#include "group/finding.h"
#include "group/stack_trie.h"
#include "hangscan/model.h"

namespace hangscan {

struct Analysis;

// "rank 2 is not in all_reduce with ranks 0-1,3: it is in train (job.py:19) -> load_batch",
// "ranks 2-3 are missing: ...", "n1:100 waits for its worker n1:104, in work (pool.py:29)".
// `trie` resolves the finding's trie references (an empty trie when it has none).
std::string finding_sentence(const JobSnapshot& job, const StackTrie& trie, const Finding& f);

std::vector<std::string> finding_sentences(const JobSnapshot& job, const StackTrie& trie,
                                           const std::vector<Finding>& findings);

// a.suspect_reasons, a.wait_chains and a.deadlocks from a.findings, a.wait_findings and
// a.deadlock_findings.
void put_finding_words(const JobSnapshot& job, Analysis& a);

}  // namespace hangscan
