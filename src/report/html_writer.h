// The HTML report: one self-contained page (the verdict, the merged stack tree with rank sets,
// search, each rank's threads) for a person to look at instead of read (docs/html-report.md).
//
// Why this shape: the page's script and stylesheet are plain source files under src/report/html/
// built into the binary, and the data is the hangscan/1 document with what ranks share stored
// once (frames, stacks, thread and process shapes), so 10,000 ranks stay a few megabytes; the
// page loads nothing from anywhere and shows every target string as text.
#pragma once

#include <string>
#include <string_view>

#include "group/analysis.h"
#include "hangscan/model.h"

namespace hangscan {

inline constexpr const char* kHtmlDataSchema = "hangscan-html/1";

std::string render_html(const JobSnapshot& job, const Analysis& analysis);

// Which script builds the page from its data: the report of a capture (report.js) or the
// report of a watch window (watch.js: timelines per rank, a flame graph per group).
enum class HtmlView { report, watch };

// The page around `data` (JSON, made safe with json_for_script), with the view's script.
std::string html_page(std::string_view data, HtmlView view);

// The page's data: the hangscan/1 document (json_writer.h) with every stack an index into
// "stacks" (lists of indexes into "frames"), each thread [tid, shape, blocked_s, cpu_ticks]
// with the rest in "thread_shapes", and each process a row of "process_columns" (its shape in
// "process_shapes", its threads, then what differs between ranks); each group with its members
// (process indexes); the verdict's lines tied to the findings (report/html_verdict.h) instead
// of the sentence lists.
std::string html_page_data(const JobSnapshot& job, const Analysis& analysis);

// `json` made safe inside <script type="application/json">: "<" becomes "\u003c" (so no
// "</script>" or "<!--" can end or change the element; JSON reads it back as "<").
std::string json_for_script(std::string_view json);

}  // namespace hangscan
