// The watch report as text and as JSON (schema: docs/output-schema.md, "watch").
//
// Why here and not in report/: it renders a WatchReport, which only src/watch produces; frames
// are rendered by report/'s frame writers, so a frame reads the same as in `dump`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "watch/watch_report.h"

namespace hangscan {

std::string watch_text(const WatchReport& r);
nlohmann::json watch_json(const WatchReport& r);

}  // namespace hangscan
