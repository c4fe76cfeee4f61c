#include "util/diagnostic.h"

namespace hangscan {

Diagnostic make_diagnostic(Diagnostic::Severity severity, std::string message, std::string hint,
                           std::optional<int> pid) {
  Diagnostic d;
  d.severity = severity;
  d.message = std::move(message);
  d.hint = std::move(hint);
  d.pid = pid;
  return d;
}

Diagnostic error_diagnostic(const Error& error, std::optional<int> pid) {
  return make_diagnostic(Diagnostic::Severity::error, error.what(), error.hint, pid);
}

}  // namespace hangscan
