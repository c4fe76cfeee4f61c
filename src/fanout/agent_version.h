// Is the hangscan binary at an agent path the same version as this one?
//
// Why: the fan-out runs `AGENT_PATH agent ...` on every node, and a node whose copy is another
// version (a shared file system with an old build, a node left out of an upgrade) answers in a
// format this front end may read differently. The fan-out itself refuses such answers
// (report/agent_format.h, agent_version_mismatch); `hangscan doctor --agent-path PATH`, run on
// a node, says so before a hang, from the binary's own `--version`.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "report/agent_format.h"

namespace hangscan {

// "hangscan 0.1.0 (commit 53b5ae4e0498)" -> {0.1.0, 53b5ae4e0498}; nullopt for anything else.
std::optional<AgentVersion> parse_version_line(std::string_view line);

struct AgentBinaryCheck {
  enum class Level { ok, warn, fail };
  Level level = Level::fail;
  std::string finding;
  std::string fix;  // empty when ok
};

// Runs `path --version` (bounded by `timeout`) and compares it with this build: fail when it
// cannot run, is not hangscan or is another version; warn when only the commit differs.
AgentBinaryCheck check_agent_binary(const std::string& path,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace hangscan
