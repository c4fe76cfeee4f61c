// The words and the document of `hangscan logs`: a text report that opens with SUSPECT lines as
// `dump` does, and JSON (schema "hangscan-logs/1", docs/logs.md).
//
// Why here: the findings are data (log_verdict.h); this is the one place that turns them into
// sentences, so the text, the JSON and a later HTML view agree.
#pragma once

#include <string>
#include <vector>

#include "group/analysis.h"
#include "logs/log_events.h"

namespace hangscan {

// One sentence per suspect finding ("rank 5 never enqueued collective 1042 of PG 0 (...)").
std::vector<std::string> log_suspect_reasons(const LogSet& logs, const LogFindings& findings);

// "last log: "LINE" (FILE:N, 12 s before the dump)": a rank's last words (log_join.h).
std::string last_log_words(const RankLastLog& l);

// The logs in a capture's verdict (`--logs`): a SUSPECT sentence about one rank gets that rank's
// last log line; a suspect rank without such a sentence gets one with its line and its frame;
// the logs' own findings follow as "logs: ..." sentences, a finding about one rank saying where
// its stack stands ("; it is in load_batch (data.py:88)"). Needs a.last_logs (join_logs()).
// Words as they are: the capture's writers escape them.
void add_log_sentences(const LogSet& logs, const LogFindings& findings, Analysis& a);

// The whole text report. max_events: how many events the "Events" list shows (the rest counted).
std::string render_logs_text(const LogSet& logs, const LogFindings& findings,
                             std::size_t max_events = 50);

// The JSON document, every event included.
std::string render_logs_json(const LogSet& logs, const LogFindings& findings);

}  // namespace hangscan
