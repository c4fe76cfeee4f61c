// make_diagnostic(): the one way a message (or an Error) becomes a report Diagnostic.
//
// Why: the dump, core and agent paths each had their own three-line builder of the same
// diagnostic; a field added to Diagnostic (the host, a pid) was then set in some of them only.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "hangscan/model.h"
#include "hangscan/result.h"

namespace hangscan {

Diagnostic make_diagnostic(Diagnostic::Severity severity, std::string message,
                           std::string hint = {}, std::optional<int> pid = std::nullopt);

// An error diagnostic with the error's one line (what()) and hint.
Diagnostic error_diagnostic(const Error& error, std::optional<int> pid = std::nullopt);

// The severity whose severity_name() is `name` ("" reads as warning, the default); nullopt for
// any other word. Why: the report readers (JSON document, agent stream) each had its own.
std::optional<Diagnostic::Severity> severity_named(std::string_view name);

}  // namespace hangscan
