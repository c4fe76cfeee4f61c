// The one way diagnostics are made (error_diagnostic) and severities read back (severity_named).
#include <gtest/gtest.h>

#include "util/diagnostic.h"

namespace hangscan {
namespace {

TEST(Diagnostic, AnErrorBecomesAnErrorDiagnosticWithItsContextHintAndPid) {
  Error e(Errc::io, "cannot read", 0, "try again");
  e.with_context("thread 7");
  Diagnostic d = error_diagnostic(e, 42);
  EXPECT_EQ(d.severity, Diagnostic::Severity::error);
  EXPECT_EQ(d.message, "thread 7: cannot read");
  EXPECT_EQ(d.hint, "try again");
  EXPECT_EQ(d.pid, 42);
  EXPECT_EQ(d.tid, std::nullopt);
  EXPECT_EQ(d.host, "");
}

TEST(Diagnostic, SeveritiesAreReadBackByTheirNames) {
  for (auto s :
       {Diagnostic::Severity::info, Diagnostic::Severity::warning, Diagnostic::Severity::error})
    EXPECT_EQ(severity_named(severity_name(s)), s);
  EXPECT_EQ(severity_named(""), Diagnostic::Severity::warning);  // the default
  EXPECT_EQ(severity_named("fatal"), std::nullopt);
  EXPECT_EQ(severity_named("Error"), std::nullopt);
}

}  // namespace
}  // namespace hangscan
