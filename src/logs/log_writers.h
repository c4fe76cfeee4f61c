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

// The logs' own verdict in a capture's (`--logs`): a.log_verdict, one sentence per finding of
// the logs, a finding about one rank saying where its stack stands ("; it is in load_batch
// (data.py:88)"). Needs a.last_logs (join_logs()). The writers show them as "logs: ..." after
// the capture's sentences, which get the ranks' last log lines (report/finding_words.h).
// Words as they are: the capture's writers escape them.
void add_log_sentences(const LogSet& logs, const LogFindings& findings, Analysis& a);

// The whole text report. max_events: how many events the "Events" list shows (the rest counted).
std::string render_logs_text(const LogSet& logs, const LogFindings& findings,
                             std::size_t max_events = 50);

// The JSON document, every event included.
std::string render_logs_json(const LogSet& logs, const LogFindings& findings);

}  // namespace hangscan
