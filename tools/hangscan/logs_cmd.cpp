// `hangscan logs PATH...`: what every rank's log said, read as events and joined into a verdict.
//
// Why a command of its own: before anyone attaches a debugger the job has usually said what
// went wrong, once per rank, in thousands of lines; this reads them all (files, directories,
// globs, gzip'd or not) and opens with SUSPECT lines as `dump` does (docs/logs.md).
#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "logs/log_join.h"
#include "logs/log_reader.h"
#include "logs/log_verdict.h"
#include "logs/log_writers.h"
#include "output.h"

namespace hangscan::cli {

namespace {

struct LogsCmdOptions {
  std::vector<std::string> paths;
  bool json = false;
  int world = 0;
  int events = 50;
};

int run_logs(const LogsCmdOptions& o) {
  LogSet logs = read_logs(o.paths);
  LogFindings findings =
      analyze_logs(logs, o.world > 0 ? std::optional<int>(o.world) : std::nullopt);
  std::string text = o.json ? render_logs_json(logs, findings)
                            : render_logs_text(logs, findings, static_cast<std::size_t>(o.events));
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    print_error("the report could not be written to standard output",
                "check the disk or the pipe standard output goes to");
    return kExitNothing;
  }
  std::size_t unread = 0;
  for (const LogFile& f : logs.files) unread += !f.error.empty();
  if (unread == logs.files.size()) {
    print_error(fmt::format("no log could be read ({} named)", logs.files.size()),
                "name log files, directories or glob patterns that exist and are readable");
    return kExitNothing;
  }
  return unread ? kExitPartial : kExitComplete;
}

}  // namespace

void join_job_logs(const JobSnapshot& job, Analysis& analysis,
                   const std::vector<std::string>& paths, const std::vector<LogText>& texts) {
  LogSet logs = read_logs(paths, {}, texts);
  for (const LogFile& f : logs.files) {
    if (!f.error.empty())
      print_error(fmt::format("--logs: {}: {}", f.path, f.error),
                  "name log files, directories or glob patterns that exist and are readable");
  }
  ranks_from_capture(logs, job);
  LogFindings findings = analyze_logs(logs, analysis.world_size);
  analysis.last_logs = join_logs(logs, job);
  ranks_of_deaths(logs, analysis);
  mark_launcher_stops(logs, job, analysis);
  add_log_sentences(logs, findings, analysis);
}

void add_logs_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<LogsCmdOptions>();
  CLI::App* sub = app.add_subcommand(
      "logs", "read every rank's log (files, directories, globs, .gz) and name the odd ranks");
  sub->add_option("paths", o->paths, "log files, directories (read recursively) or glob patterns")
      ->required();
  sub->add_flag("--json", o->json, "the JSON document (schema hangscan-logs/1)");
  sub->add_option("--world", o->world, "the job's number of ranks (ranks with no log count)")
      ->check(whole_number("--world", 1, 1 << 24));
  sub->add_option("--events", o->events, "events the text lists (default 50)")
      ->check(whole_number("--events", 0, 1 << 24));
  sub->callback([o, &action] { action = [o] { return run_logs(*o); }; });
}

}  // namespace hangscan::cli
