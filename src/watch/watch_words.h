// A watch verdict in words: each behaviour's, the groups', the findings'.
//
// Why apart from watch_groups.h: the engine returns what each process did and what the grouping
// found as data (kinds, figures, frames, members); the text and JSON writers make the sentences
// here, so a new output reads the data, not the prose, and the sentences stay the same in each.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "watch/process_facts.h"
#include "watch/watch_report.h"

namespace hangscan {

// "stuck in read() (12.0 s)", "slept in work (pool.py:11) for 5.4 s (clock_nanosleep())",
// "active (on CPU 98%, 3 waits ended)", "killed by SIGKILL".
std::string behaviour_words(const Behaviour& b);

// "exited with status 3", "killed by SIGKILL", "killed by SIGSEGV (core dumped)", "ended (its
// exit status is not known without eBPF)".
std::string exit_words(const ProcessExit& e);

// A capture note: "no Python frames in samples: WHY", "3 samples from before its exec at 1.2 s
// not resolved: the program they ran is gone", "pid 7: 2 sampled stacks not resolved: WHY".
std::string note_words(const WatchNote& n);

// The verdict's findings in words: the suspects' reasons, then the notes naming nobody (an owner
// that waits for its straggler first).
struct WatchVerdictWords {
  std::vector<std::string> suspect_reasons;
  std::vector<std::string> notes;
};
WatchVerdictWords watch_verdict_words(const WatchVerdict& v);

// The verdict in the report's JSON: groups (with each one's behaviour as data and in words),
// suspects, suspect_reasons, group_notes and the findings as data (report/finding_json.h).
void verdict_into_json(const WatchVerdict& v, nlohmann::json& j);

// The verdict's lines of the text report, from the verdict or from a report's JSON (a cluster's
// merged one, read leniently: a missing or odd field is left out).
std::string verdict_text(const WatchVerdict& v);
std::string verdict_text(const nlohmann::json& j);

}  // namespace hangscan
