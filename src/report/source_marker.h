// The running expression of a Python frame, shown as CPython 3.11+ tracebacks show it.
//
// Why: a line like `x = f(a) + g(b)` hangs in f or in g; the location table's columns say
// which, and a `^^^^` line under the source makes that visible in the text report.
#pragma once

#include <string>
#include <vector>

#include "hangscan/model.h"

namespace hangscan {

// The source line (stripped of its indentation) and, when the running part is not the whole
// line, a marker line of '^' under it. Empty when the frame has no source or no column. The line
// is in its visible form (util/escape.h: the source is the target's file), the marker under it.
std::vector<std::string> source_marker(const Frame& f);

}  // namespace hangscan
