#include "fanout/slurm_job_logs.h"

#include <fmt/core.h>
#include <grp.h>
#include <pwd.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <set>

#include "fanout/hostlist.h"
#include "fanout/runner.h"
#include "fanout/slurm.h"
#include "proc/target_file.h"
#include "util/deadline.h"
#include "util/parse_number.h"

namespace hangscan {

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

// One file of the job read with its user's rights; `root`: where a relative `path` resolves
// (a process's /proc/PID/cwd); `shown`: the name said for it, when not `path`.
LogText read_job_file(const std::string& path, const FileCredentials& as,
                      const std::string& root = "/", const std::string& shown = {}) {
  TargetFileRequest req;
  req.root = root;
  req.name = path;
  req.as = as;
  req.max_bytes = std::size_t{256} << 20;
  req.timeout = std::chrono::milliseconds(10000);
  LogText t;
  t.name = shown.empty() ? path : shown;
  if (auto file = read_file_as(req)) {
    t.text = std::move(file->text);
    t.modified = static_cast<double>(file->changed_ns) / 1e9;
  } else {
    t.error = file.error().what();
  }
  return t;
}

// srun's options that take an argument (Slurm 22.05's srun --help): a separate word after
// them is that argument, not the command. Options with an optional argument take it only
// attached ("-k0", "--kill-on-bad-exit=1").
constexpr std::string_view kSrunShortWithArgument = "ABcCdDeGiJLmMnNopqrStTwWx";
constexpr std::string_view kSrunLongWithArgument[] = {"account",
                                                      "accel-bind",
                                                      "acctg-freq",
                                                      "bb",
                                                      "bbf",
                                                      "begin",
                                                      "chdir",
                                                      "cluster",
                                                      "cluster-constraint",
                                                      "clusters",
                                                      "comment",
                                                      "constraint",
                                                      "container",
                                                      "core-spec",
                                                      "cores-per-socket",
                                                      "cpu-bind",
                                                      "cpu-freq",
                                                      "cpus-per-gpu",
                                                      "cpus-per-task",
                                                      "deadline",
                                                      "delay-boot",
                                                      "dependency",
                                                      "distribution",
                                                      "epilog",
                                                      "error",
                                                      "exclude",
                                                      "export",
                                                      "extra-node-info",
                                                      "gid",
                                                      "gpu-bind",
                                                      "gpu-freq",
                                                      "gpus",
                                                      "gpus-per-node",
                                                      "gpus-per-socket",
                                                      "gpus-per-task",
                                                      "gres",
                                                      "gres-flags",
                                                      "het-group",
                                                      "hint",
                                                      "input",
                                                      "job-name",
                                                      "jobid",
                                                      "licenses",
                                                      "mail-type",
                                                      "mail-user",
                                                      "mcs-label",
                                                      "mem",
                                                      "mem-bind",
                                                      "mem-per-cpu",
                                                      "mem-per-gpu",
                                                      "mincpus",
                                                      "mpi",
                                                      "network",
                                                      "nodefile",
                                                      "nodelist",
                                                      "nodes",
                                                      "ntasks",
                                                      "ntasks-per-core",
                                                      "ntasks-per-gpu",
                                                      "ntasks-per-node",
                                                      "ntasks-per-socket",
                                                      "open-mode",
                                                      "output",
                                                      "partition",
                                                      "power",
                                                      "prefer",
                                                      "priority",
                                                      "profile",
                                                      "prolog",
                                                      "qos",
                                                      "relative",
                                                      "reservation",
                                                      "signal",
                                                      "slurmd-debug",
                                                      "sockets-per-node",
                                                      "switches",
                                                      "task-epilog",
                                                      "task-prolog",
                                                      "thread-spec",
                                                      "threads",
                                                      "threads-per-core",
                                                      "time",
                                                      "time-min",
                                                      "tmp",
                                                      "tres-per-task",
                                                      "uid",
                                                      "wait",
                                                      "wckey"};

void keep_srun_file(SrunFiles& f, std::string_view option, const std::string& value) {
  if (option == "o" || option == "output") f.output = value;
  if (option == "e" || option == "error") f.error = value;
  if (option == "D" || option == "chdir") f.chdir = value;
}

// One running step of `scontrol -o show step JOB`: its id, nodes, task count and srun.
struct StepFields {
  std::string step;      // "0" of "StepId=42.0"
  std::string nodelist;  // "n[1-3]"
  unsigned tasks = 0;
  std::string srun_host;  // SrunHost:Pid=vm:5888
  int srun_pid = 0;
};

std::string word_value(std::string_view line, std::string_view key) {
  std::string v = line_value(line, key);
  return v.substr(0, v.find(' '));
}

std::vector<StepFields> parse_steps(std::string_view text) {
  std::vector<StepFields> out;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    std::string_view line = text.substr(at, end == std::string_view::npos ? text.npos : end - at);
    at = end == std::string_view::npos ? text.size() : end + 1;
    StepFields f;
    std::string id = word_value(line, "StepId="), srun = word_value(line, "SrunHost:Pid=");
    f.step = id.substr(id.find('.') + 1);
    auto tasks = parse_int_in<unsigned>(word_value(line, "Tasks="), 1, 1u << 20);
    std::size_t colon = srun.rfind(':');
    auto pid =
        parse_int_in<int>(colon == std::string::npos ? "" : srun.substr(colon + 1), 1, 1 << 30);
    if (!parse_int_in<unsigned>(f.step, 0, 0xfffffff0u) || !tasks || !pid) continue;
    f.nodelist = word_value(line, "NodeList=");
    f.tasks = *tasks;
    f.srun_host = srun.substr(0, colon);
    f.srun_pid = *pid;
    out.push_back(std::move(f));
  }
  return out;
}

// The tasks of `step` on `node` (scontrol listpids' GLOBALID column): those still running.
std::vector<unsigned> tasks_on_node(const std::string& job_id, const StepFields& step,
                                    const std::string& node) {
  std::vector<unsigned> out;
  auto listed = scontrol({"scontrol", "listpids", job_id + "." + step.step, node});
  std::string_view text = listed ? std::string_view(*listed) : std::string_view();
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    std::size_t last = line.find_last_not_of(' ');
    if (last == std::string_view::npos) continue;
    std::size_t first = line.find_last_of(' ', last);
    first = first == std::string_view::npos ? 0 : first + 1;
    auto task = parse_int_in<unsigned>(line.substr(first, last + 1 - first), 0, step.tasks - 1);
    if (task && std::find(out.begin(), out.end(), *task) == out.end()) out.push_back(*task);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A NUL-separated /proc file of the srun, read as the job's user could.
std::vector<std::string> proc_words(int pid, const char* file, const FileCredentials& as) {
  TargetFileRequest req;
  req.root = "/";
  req.name = fmt::format("/proc/{}/{}", pid, file);
  req.as = as;
  req.max_bytes = std::size_t{4} << 20;
  std::vector<std::string> out;
  auto got = read_file_as(req);
  if (!got) return out;
  std::string_view text = got->text;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = std::min(text.find('\0', at), text.size());
    out.emplace_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

std::string environment_value(const std::vector<std::string>& env, std::string_view key) {
  for (const std::string& e : env) {
    if (e.size() > key.size() && e.compare(0, key.size(), key) == 0 && e[key.size()] == '=')
      return e.substr(key.size() + 1);
  }
  return {};
}

// Where one name of the step's files is read: absolute, or in srun's working directory (its
// --chdir first). Empty for a name that climbs out of it ("..": not followed).
struct StepFileName {
  std::string root, name, shown;
};
std::optional<StepFileName> step_file_name(int pid, const std::string& chdir,
                                           const std::string& file) {
  std::string name = file.front() == '/' || chdir.empty() ? file : chdir + "/" + file;
  if (name.front() == '/') return StepFileName{"/", name, name};
  if (name == ".." || name.rfind("../", 0) == 0 || name.find("/../") != std::string::npos ||
      name.ends_with("/.."))
    return std::nullopt;
  std::string cwd = fmt::format("/proc/{}/cwd", pid);
  std::error_code ec;
  std::filesystem::path at = std::filesystem::read_symlink(cwd, ec);
  return StepFileName{cwd, name, ec ? name : (at / name).string()};
}

// Every task's file of one pattern: by task (%t), else by node (%n, %N), else one file.
void read_step_pattern(const std::string& pattern, const TaskPlace& job, const StepFields& step,
                       const std::string& job_id, const SrunFiles& files, const FileCredentials& as,
                       std::vector<LogText>& out) {
  TaskPlace b = job;
  b.task = 1;
  bool by_task = expand_task_pattern(pattern, job) != expand_task_pattern(pattern, b);
  b = job;
  b.node_index = 1;
  b.host = "\x01";
  bool by_node = expand_task_pattern(pattern, job) != expand_task_pattern(pattern, b);
  std::vector<std::pair<TaskPlace, std::optional<int>>> places;
  if (!by_node) {
    for (unsigned t = 0; t < (by_task ? step.tasks : 1u); ++t) {
      TaskPlace p = job;
      p.task = t;
      places.emplace_back(p, by_task ? std::optional<int>(static_cast<int>(t)) : std::nullopt);
    }
  } else if (auto nodes = parse_hostlist(step.nodelist)) {
    for (unsigned n = 0; n < nodes->size(); ++n) {
      TaskPlace p = job;
      p.node_index = n;
      p.host = node_host_name((*nodes)[n]);
      std::vector<unsigned> tasks = tasks_on_node(job_id, step, (*nodes)[n]);
      if (!by_task) tasks.resize(std::min<std::size_t>(tasks.size(), 1));
      for (unsigned t : tasks) {
        p.task = t;
        places.emplace_back(p, by_task ? std::optional<int>(static_cast<int>(t)) : std::nullopt);
      }
    }
  }
  std::set<std::string> seen;
  for (const auto& [place, rank] : places) {
    auto where = step_file_name(step.srun_pid, files.chdir, expand_task_pattern(pattern, place));
    if (!where || !seen.insert(where->shown).second) continue;
    out.push_back(read_job_file(where->name, as, where->root, where->shown));
    out.back().rank = rank;
  }
}

// The per-task files of the job's running steps whose srun runs here.
void read_step_files(const std::string& job_id, TaskPlace job, const FileCredentials& as,
                     JobOutputLogs& out) {
  auto shown = scontrol({"scontrol", "-o", "show", "step", job_id});
  if (!shown) return;
  std::array<char, 256> name{};
  ::gethostname(name.data(), name.size() - 1);
  std::string here(name.data());
  here = here.substr(0, here.find('.'));
  for (const StepFields& step : parse_steps(*shown)) {
    if (step.srun_host.substr(0, step.srun_host.find('.')) != here) {
      out.problems.emplace_back(Errc::not_found,
                                fmt::format("--job-logs: step {}.{}'s srun runs on {}: its -o/-e "
                                            "files are named only there",
                                            job_id, step.step, step.srun_host),
                                0, "run hangscan there, or name the files with --logs");
      continue;
    }
    std::vector<std::string> argv = proc_words(step.srun_pid, "cmdline", as);
    if (argv.empty() || std::filesystem::path(argv.front()).filename() != "srun") continue;
    SrunFiles files = parse_srun_files(argv);
    std::vector<std::string> env = proc_words(step.srun_pid, "environ", as);
    if (files.output.empty()) files.output = environment_value(env, "SLURM_STDOUTMODE");
    if (files.error.empty()) files.error = environment_value(env, "SLURM_STDERRMODE");
    job.step_id = step.step;
    std::vector<std::string> patterns{files.output};
    if (files.error != files.output) patterns.push_back(files.error);
    for (const std::string& pattern : patterns) {
      if (!pattern.empty() && pattern != "none")
        read_step_pattern(pattern, job, step, job_id, files, as, out.logs);
    }
  }
}

}  // namespace

SrunFiles parse_srun_files(const std::vector<std::string>& argv) {
  SrunFiles f;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--" || a.size() < 2 || a.front() != '-') break;  // the command
    if (a.rfind("--", 0) == 0) {
      std::size_t eq = a.find('=');
      std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      bool takes = std::find(std::begin(kSrunLongWithArgument), std::end(kSrunLongWithArgument),
                             name) != std::end(kSrunLongWithArgument);
      if (eq != std::string::npos) keep_srun_file(f, name, a.substr(eq + 1));
      else if (takes && i + 1 < argv.size()) keep_srun_file(f, name, argv[++i]);
      continue;
    }
    for (std::size_t j = 1; j < a.size(); ++j) {
      if (kSrunShortWithArgument.find(a[j]) == std::string_view::npos) {
        if (a[j] == 'k' || a[j] == 'K') break;  // an optional argument, attached
        continue;
      }
      std::string value = j + 1 < a.size() ? a.substr(j + 1) : i + 1 < argv.size() ? argv[++i] : "";
      keep_srun_file(f, std::string(1, a[j]), value);
      break;
    }
  }
  return f;
}

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
    const std::string* job_field = what == 'j'   ? &place.job_id
                                   : what == 's' ? &place.step_id
                                   : what == 'u' ? &place.user
                                   : what == 'x' ? &place.job_name
                                                 : nullptr;
    if (what == 't' || what == 'n') {
      out += fmt::format("{:0{}}", what == 't' ? place.task : place.node_index, pad);
    } else if (job_field && !job_field->empty()) {
      out += fmt::format("{:0>{}}", *job_field, what == 'j' || what == 's' ? pad : 0);
    } else if (what == 'J' && !place.job_id.empty() && !place.step_id.empty()) {
      out += place.job_id + "." + place.step_id;
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

JobOutputLogs slurm_job_output_logs(const std::string& job_id) {
  JobOutputLogs out;
  if (!validate_job_id(job_id)) return out;  // said by the capture that follows
  auto shown = scontrol({"scontrol", "show", "job", job_id});
  if (!shown) {
    out.problems.emplace_back(
        Errc::not_found, fmt::format("--job-logs: 'scontrol show job {}' did not answer", job_id),
        0, "name the job's output files with --logs instead");
    return out;
  }
  JobOutputFields f = parse_job_output_fields(*shown);
  if (!f.uid || !f.gid) {
    out.problems.emplace_back(Errc::not_found,
                              fmt::format("--job-logs: scontrol did not say job {}'s user", job_id),
                              0, "name the job's output files with --logs instead");
    return out;
  }
  FileCredentials as{*f.uid, *f.gid, job_user_groups(*f.uid, *f.gid)};
  // StdOut/StdErr are the batch step's: its one task, 0, on the job's first node (BatchHost).
  TaskPlace place;
  for (const std::string& path : f.paths) {
    if (f.batch && place.host.empty() && path.find("%N") != std::string::npos)
      place.host = node_host_name(f.batch_host);
    out.logs.push_back(read_job_file(expand_task_pattern(path, place), as));
  }
  TaskPlace job;
  job.job_id = job_id;
  job.job_name = line_value(*shown, "JobName=");
  job.user = line_value(*shown, "UserId=");
  job.user = job.user.substr(0, job.user.find('('));
  read_step_files(job_id, job, as, out);
  if (out.logs.empty()) {  // a job started by srun, its tasks' output through srun
    out.problems.emplace_back(
        Errc::not_found,
        fmt::format("--job-logs: job {} has no StdOut or StdErr file (not a batch job)", job_id), 0,
        "name the files its srun wrote (srun -o) with --logs");
  }
  return out;
}

}  // namespace hangscan
