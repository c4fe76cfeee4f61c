#include "fanout/agent_version.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include "fanout/agent_framing.h"
#include "fanout/runner.h"
#include "util/version.h"

namespace hangscan {

std::optional<AgentVersion> parse_version_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.remove_suffix(1);
  constexpr std::string_view kPrefix = "hangscan ";
  constexpr std::string_view kCommit = " (commit ";
  if (line.substr(0, kPrefix.size()) != kPrefix || line.empty() || line.back() != ')')
    return std::nullopt;
  line.remove_prefix(kPrefix.size());
  line.remove_suffix(1);
  auto at = line.find(kCommit);
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  AgentVersion v{std::string(line.substr(0, at)), std::string(line.substr(at + kCommit.size()))};
  if (v.commit.empty() || v.version.find(' ') != std::string::npos) return std::nullopt;
  return v;
}

AgentBinaryCheck check_agent_binary(const std::string& path, std::chrono::milliseconds timeout) {
  AgentBinaryCheck c;
  const std::string ours =
      fmt::format("hangscan {} (commit {})", hangscan_version(), hangscan_commit());
  const std::string fix =
      "install the same hangscan package on every node, or point --agent-path to a copy of this "
      "version on a shared file system (docs/slurm.md)";
  if (path.empty() || path.front() != '/') {
    c.finding = fmt::format(
        "'{}' is not an absolute path; the fan-out runs the agent by this path on every node",
        path);
    c.fix = "pass an absolute --agent-path";
    return c;
  }
  if (::access(path.c_str(), X_OK) != 0) {
    c.finding = fmt::format("{} cannot be run here: {}", path, std::strerror(errno));
    c.fix = fix;
    return c;
  }
  CommandSpec spec;
  spec.argv = {path, "--version"};
  spec.max_stdout = 4096;
  auto run = run_command(spec, Deadline::after(timeout));
  if (!run || !run->succeeded()) {
    std::string why = !run ? std::string(run.error().what())
                      : run->timed_out
                          ? fmt::format("no answer within {} ms", timeout.count())
                          : fmt::format("exit code {}: {}", run->exit_code,
                                        last_output_line(run->err.empty() ? run->out : run->err));
    c.finding = fmt::format("'{} --version' failed ({})", path, why);
    c.fix = fix;
    return c;
  }
  const std::string said = last_output_line(run->out);
  auto theirs = parse_version_line(said);
  if (!theirs) {
    c.finding =
        fmt::format("{} does not say it is hangscan ('--version' printed '{}')", path, said);
    c.fix = fix;
    return c;
  }
  const std::string them = fmt::format("hangscan {} (commit {})", theirs->version, theirs->commit);
  if (theirs->version != hangscan_version()) {
    c.finding = fmt::format("{} is {}, this front end is {}: the fan-out refuses its answers", path,
                            them, ours);
    c.fix = fix;
  } else if (theirs->commit != hangscan_commit()) {
    c.level = AgentBinaryCheck::Level::warn;
    c.finding = fmt::format("{} is {}, this front end is {}: same version, another build", path,
                            them, ours);
    c.fix = "use one build everywhere when the two differ in more than the commit";
  } else {
    c.level = AgentBinaryCheck::Level::ok;
    c.finding = fmt::format("{} is {}, the same as this front end", path, them);
  }
  return c;
}

}  // namespace hangscan
