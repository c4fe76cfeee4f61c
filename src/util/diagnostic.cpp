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

std::optional<Diagnostic::Severity> severity_named(std::string_view name) {
  if (name.empty()) return Diagnostic::Severity::warning;
  for (auto s :
       {Diagnostic::Severity::info, Diagnostic::Severity::warning, Diagnostic::Severity::error}) {
    if (name == severity_name(s)) return s;
  }
  return std::nullopt;
}

}  // namespace hangscan
