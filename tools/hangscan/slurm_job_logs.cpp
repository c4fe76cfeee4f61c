#include "slurm_job_logs.h"

#include <fmt/core.h>
#include <grp.h>
#include <pwd.h>

#include <algorithm>
#include <chrono>

#include "cli.h"
#include "fanout/hostlist.h"
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

// The job's user's groups as the node's login would give them (the user database's
// supplementary groups, as slurmd sets them for the job's tasks); just the job's group when the
// user is not known here.
std::vector<gid_t> job_user_groups(uid_t uid, gid_t gid) {
  passwd pw{}, *found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) return {gid};
  std::vector<gid_t> groups(64);
  int n = static_cast<int>(groups.size());
  if (::getgrouplist(pw.pw_name, gid, groups.data(), &n) < 0) {
    groups.resize(static_cast<std::size_t>(std::clamp(n, 1, 65536)));
    if (::getgrouplist(pw.pw_name, gid, groups.data(), &n) < 0) return {gid};
  }
  groups.resize(static_cast<std::size_t>(std::max(n, 0)));
  return groups;
}

// What scontrol answers to `argv`; nullopt when it does not (in time).
std::optional<std::string> scontrol(std::vector<std::string> argv) {
  CommandSpec spec;
  spec.argv = std::move(argv);
  spec.max_stdout = std::size_t{1} << 20;
  clean_slurm_environment(spec);
  auto r = run_command(spec, Deadline::after(std::chrono::milliseconds(10000)));
  if (!r || !r->succeeded()) return std::nullopt;
  return std::move(r->out);
}

// The short host name slurmd of `node` runs under (what %N names), else the node's own name.
std::string node_host_name(const std::string& node) {
  auto out = scontrol({"scontrol", "-o", "show", "node", node});
  std::string host = out ? line_value(*out, "NodeHostName=") : std::string();
  host = host.substr(0, host.find(' '));
  return host.empty() ? node : host;
}

// One file of the job read with its user's rights.
LogText read_job_file(const std::string& path, const FileCredentials& as) {
  TargetFileRequest req;
  req.root = "/";
  req.name = path;
  req.as = as;
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
  return t;
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
  std::string flag = line_value(text, "BatchFlag="), host = line_value(text, "BatchHost=");
  f.batch = flag.substr(0, flag.find(' ')) == "1";
  f.batch_host = host.substr(0, host.find(' '));
  return f;
}

std::string expand_task_pattern(std::string_view pattern, const TaskPlace& place) {
  if (pattern.find('\\') != std::string_view::npos) return std::string(pattern);
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    std::size_t j = i + 1;
    while (pattern[i] == '%' && j < pattern.size() && j - i < 4 && pattern[j] >= '0' &&
           pattern[j] <= '9')
      ++j;
    char what = pattern[i] == '%' && j < pattern.size() ? pattern[j] : '\0';
    auto width = parse_int_in<unsigned>(pattern.substr(i + 1, j - i - 1), 0, 99);
    std::size_t pad = j > i + 1 && width ? *width : 0;
    if (what == 't' || what == 'n') {
      out += fmt::format("{:0{}}", what == 't' ? place.task : place.node_index, pad);
    } else if (what == 'N') {
      out += place.host;
    } else if (what == '%' && j == i + 1) {
      out += '%';
    } else {
      out += pattern[i];
      continue;
    }
    i = j;
  }
  return out;
}

std::vector<LogText> slurm_job_output_logs(const std::string& job_id) {
  if (!validate_job_id(job_id)) return {};  // said by the capture that follows
  auto shown = scontrol({"scontrol", "show", "job", job_id});
  if (!shown) {
    print_error(fmt::format("--job-logs: 'scontrol show job {}' did not answer", job_id),
                "name the job's output files with --logs instead");
    return {};
  }
  JobOutputFields f = parse_job_output_fields(*shown);
  std::vector<LogText> out;
  if (!f.uid || !f.gid) {
    print_error(fmt::format("--job-logs: scontrol did not say job {}'s user", job_id),
                "name the job's output files with --logs instead");
    return out;
  }
  if (f.paths.empty()) {  // a job started by srun: its tasks' output went through srun
    print_error(
        fmt::format("--job-logs: job {} has no StdOut or StdErr file (not a batch job)", job_id),
        "name the files its srun wrote (srun -o) with --logs");
    return out;
  }
  FileCredentials as{*f.uid, *f.gid, job_user_groups(*f.uid, *f.gid)};
  // StdOut/StdErr are the batch step's: its one task, 0, on the job's first node (BatchHost).
  TaskPlace place;
  for (const std::string& path : f.paths) {
    if (f.batch && place.host.empty() && path.find("%N") != std::string::npos)
      place.host = node_host_name(f.batch_host);
    out.push_back(read_job_file(expand_task_pattern(path, place), as));
  }
  return out;
}

}  // namespace hangscan::cli
