// The HTML report: one self-contained page (the verdict, the merged stack tree with rank sets,
// search, each rank's threads) for a person to look at instead of read (docs/html-report.md).
//
// Why this shape: the page's script and stylesheet are plain source files under src/report/html/
// built into the binary, and the data is the same hangscan/1 document the JSON writer makes,
// embedded once; the page loads nothing from anywhere and shows every target string as text.
#pragma once

#include <string>
#include <string_view>

#include "group/analysis.h"
#include "hangscan/model.h"

namespace hangscan {

std::string render_html(const JobSnapshot& job, const Analysis& analysis);

// `json` made safe inside <script type="application/json">: "<" becomes "\u003c" (so no
// "</script>" or "<!--" can end or change the element; JSON reads it back as "<").
std::string json_for_script(std::string_view json);

}  // namespace hangscan
