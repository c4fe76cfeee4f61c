// The watch report as text, as JSON (schema: docs/output-schema.md, "watch") and as an HTML page.
//
// Why here and not in report/: it renders a WatchReport, which only src/watch produces; frames
// are rendered by report/'s frame writers, so a frame reads the same as in `dump`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "watch/watch_report.h"

namespace hangscan {

// "rank 2 (pid 4711) was sent SIGTERM by pid 4700 (torchrun)": one event of the timeline.
std::string timeline_sentence(const TimelineEntry& t);

std::string watch_text(const WatchReport& r);
nlohmann::json watch_json(const WatchReport& r);
// The page (report/html_writer.h, HtmlView::watch) with watch_json's document embedded: a
// timeline strip per process and a flame graph per group (docs/html-report.md).
std::string watch_html(const WatchReport& r);
// The same page around a watch document already made (a cluster watch's merged one).
std::string watch_html(const nlohmann::json& doc);

}  // namespace hangscan
