// The version of this hangscan and the git commit it was built from.
//
// Why: `hangscan --version` says both, and every agent document carries the version, so a front
// end and an agent binary of another version on some node are told apart before a document in a
// format one of them does not know is read as garbage (fanout/collector.cpp, `hangscan doctor
// --agent-path`). Both strings come from the build (cmake/version.cmake): the project version,
// and the commit ("unknown" when built outside a git checkout).
#pragma once

#include <string>
#include <string_view>

namespace hangscan {

std::string_view hangscan_version();
std::string_view hangscan_commit();

// "hangscan 0.1.0 (commit 53b5ae4e1c2d)": what --version prints.
inline std::string hangscan_version_line() {
  return "hangscan " + std::string(hangscan_version()) + " (commit " +
         std::string(hangscan_commit()) + ")";
}

}  // namespace hangscan
