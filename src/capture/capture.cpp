#include "capture/capture.h"

#include <fmt/format.h>

#include "capture/acquire.h"
#include "capture/finish.h"
#include "capture/quiet_source.h"
#include "util/contain.h"
#include "util/diagnostic.h"

namespace hangscan {

void start_quiet_session(CaptureOptions& options) {
  if (options.quiet && !options.nonblocking && !options.quiet_session)
    options.quiet_session = QuietSession::start();
}

ProcessSnapshot capture_process(Target& target, const CaptureOptions& options,
                                SymbolCache& symbols) {
  ProcessCopy copy;
  auto failure = failure_of([&] { copy = acquire_process(target, options); });
  if (!failure && options.released) {
    std::vector<const ThreadSnapshot*> described;
    for (const ThreadCopy& t : copy.threads) described.push_back(&t.described);
    (void)failure_of([&] { options.released(copy.pid, described); });
  }
  if (!failure) return finish_process(std::move(copy), target, options, symbols);
  // The freeze (RAII) has already let the target go. Keep what describes the process.
  ProcessSnapshot snap;
  (void)failure_of([&] { target.describe_process(snap); });
  snap.threads.clear();
  snap.diagnostics.push_back(
      make_diagnostic(Diagnostic::Severity::error,
                      fmt::format("{}: capture failed: {}", target.describe(), failure->message),
                      failure->hint(), target.pid()));
  return snap;
}

}  // namespace hangscan
