#include "slurm_job_logs.h"

#include <fmt/core.h>

#include <chrono>

#include "cli.h"
#include "fanout/runner.h"
#include "fanout/slurm.h"
#include "proc/target_file.h"
#include "util/deadline.h"
#include "util/parse_number.h"

namespace hangscan::cli {

namespace {

// The value of "KEY=" up to the end of its line ("   StdOut=/a b/c.out"): scontrol prints
// each path on a line of its own, and a path may hold spaces.
std::string line_value(std::string_view text, std::string_view key) {
  std::size_t at = 0;
  while ((at = text.find(key, at)) != std::string_view::npos) {
    bool word_start = at == 0 || text[at - 1] == ' ' || text[at - 1] == '\n';
    at += key.size();
    if (!word_start) continue;
    std::size_t end = text.find('\n', at);
    return std::string(
        text.substr(at, end == std::string_view::npos ? text.size() - at : end - at));
  }
  return {};
}

// "root(0)" -> 0.
std::optional<unsigned> id_in_parens(const std::string& value) {
  std::size_t open = value.find('(');
  std::size_t close = value.find(')', open);
  if (open == std::string::npos || close == std::string::npos) return std::nullopt;
  return parse_int_in<unsigned>(std::string_view(value).substr(open + 1, close - open - 1), 0,
                                0xfffffffeu);
}

}  // namespace

JobOutputFields parse_job_output_fields(std::string_view text) {
  JobOutputFields f;
  std::string user = line_value(text, "UserId="), group = line_value(text, "GroupId=");
  f.uid = id_in_parens(user.substr(0, user.find(' ')));
  f.gid = id_in_parens(group.substr(0, group.find(' ')));
  for (const char* key : {"StdOut=", "StdErr="}) {
    std::string path = line_value(text, key);
    if (!path.empty() && path.front() == '/' && (f.paths.empty() || f.paths.front() != path))
      f.paths.push_back(path);
  }
  return f;
}

std::vector<LogText> slurm_job_output_logs(const std::string& job_id) {
  CommandSpec spec;
  spec.argv = {"scontrol", "show", "job", job_id};
  spec.max_stdout = std::size_t{1} << 20;
  clean_slurm_environment(spec);
  auto r = run_command(spec, Deadline::after(std::chrono::milliseconds(10000)));
  if (!r || !r->succeeded()) {
    print_error(fmt::format("--job-logs: 'scontrol show job {}' did not answer", job_id),
                "name the job's output files with --logs instead");
    return {};
  }
  JobOutputFields f = parse_job_output_fields(r->out);
  std::vector<LogText> out;
  if (!f.uid || !f.gid) {
    print_error(fmt::format("--job-logs: scontrol did not say job {}'s user", job_id),
                "name the job's output files with --logs instead");
    return out;
  }
  for (const std::string& path : f.paths) {
    TargetFileRequest req;
    req.root = "/";
    req.name = path;
    req.as = FileCredentials{*f.uid, *f.gid, {}};
    req.max_bytes = std::size_t{256} << 20;
    req.timeout = std::chrono::milliseconds(10000);
    LogText t;
    t.name = path;
    if (auto file = read_file_as(req)) {
      t.text = std::move(file->text);
      t.modified = static_cast<double>(file->changed_ns) / 1e9;
    } else {
      t.error = file.error().what();
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace hangscan::cli
