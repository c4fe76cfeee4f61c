// The verdict of a job's logs, as data: the first failure, the ranks that fell behind in a
// process group's collectives, the ranks that said nothing while the others timed out, and
// the deaths the launchers and the kernel reported.
//
// Why these rules: a collective timeout is printed by the ranks that waited, not by the one
// they waited for; the culprit is the rank whose last enqueued collective is lowest, or the
// rank that printed nothing at all. The first failure in time is where a chain of errors began.
#pragma once

#include <optional>

#include "logs/log_events.h"

namespace hangscan {

// world: the job's size when known (a capture, --world); else the highest rank seen + 1.
LogFindings analyze_logs(const LogSet& logs, std::optional<int> world = std::nullopt);

}  // namespace hangscan
