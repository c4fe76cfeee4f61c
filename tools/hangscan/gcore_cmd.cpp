// `hangscan gcore --pid PID`: a size-bounded core of a live process that runs on afterwards;
// `--signal ABRT --yes` for the kernel's own core instead. Also the --gcore hook of dump.
#include "gcore_cmd.h"

#include <signal.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli.h"
#include "corewrite/core_pick.h"
#include "corewrite/core_plan.h"
#include "corewrite/core_writer.h"
#include "corewrite/proc_facts.h"
#include "group/analysis.h"
#include "proc/proc_files.h"

namespace hangscan::cli {

namespace {

struct GcoreOptions {
  int pid = 0;
  std::string dir = ".";
  std::string max_size = "256M";
  std::string signal;
  bool yes = false;
  bool json = false;
  int timeout_ms = 3000;
};

Result<std::uint64_t> size_option(const std::string& text) {
  auto v = parse_size(text);
  if (!v || *v == 0) {
    return Error(Errc::usage, fmt::format("--max-size {}: not a size", text), 0,
                 "give bytes with an optional K, M or G suffix, e.g. --max-size 512M");
  }
  return *v;
}

// The kernel's core instead of ours: the process ends.
int send_signal(const GcoreOptions& o) {
  std::string name = o.signal;
  if (name.starts_with("SIG")) name = name.substr(3);
  int sig = name == "ABRT" ? SIGABRT : name == "QUIT" ? SIGQUIT : name == "SEGV" ? SIGSEGV : 0;
  if (sig == 0) {
    print_error(fmt::format("--signal {}: not a core-dumping signal hangscan sends", o.signal),
                "use --signal ABRT (or QUIT, SEGV)");
    return kExitUsage;
  }
  if (!o.yes) {
    print_error(fmt::format("--signal {} ends pid {}: the kernel writes its core and the "
                            "process is gone",
                            o.signal, o.pid),
                "add --yes if that is what you want; without --signal, hangscan writes a core "
                "and the process runs on");
    return kExitUsage;
  }
  auto limits = read_text_file(fmt::format("/proc/{}/limits", o.pid));
  auto limit = limits ? parse_core_limit(*limits) : std::nullopt;
  if (limit && *limit == 0) {
    print_error(fmt::format("pid {} has a core size limit of 0: the kernel would write no core", o.pid),
                fmt::format("raise it first: prlimit --pid {} --core=unlimited", o.pid));
    return kExitNothing;
  }
  if (::kill(o.pid, sig) != 0) {
    print_error(fmt::format("cannot signal pid {}: {}", o.pid, std::strerror(errno)),
                "run as the process's user or as root");
    return kExitNothing;
  }
  auto pattern = read_text_file("/proc/sys/kernel/core_pattern");
  std::string where = pattern ? *pattern : "?";
  while (!where.empty() && where.back() == '\n') where.pop_back();
  fmt::print("sent SIG{} to pid {}; the kernel writes its core as core_pattern says: {}\n", name,
             o.pid, where);
  return kExitComplete;
}

int run_gcore(const GcoreOptions& o) {
  if (!o.signal.empty()) return send_signal(o);
  auto max = size_option(o.max_size);
  if (!max) {
    print_error(max.error());
    return kExitUsage;
  }
  CoreWriteOptions opts;
  opts.dir = o.dir;
  opts.max_size = *max;
  opts.freeze_timeout = std::chrono::milliseconds(o.timeout_ms);
  auto r = write_core_detailed(o.pid, opts);
  if (!r) {
    print_error(r.error());
    return kExitNothing;
  }
  for (const auto& w : r->warnings) print_error(w);
  if (o.json) {
    nlohmann::json j = {{"path", r->path},
                        {"pid", o.pid},
                        {"pause_us", r->pause_us},
                        {"file_size", r->file_size},
                        {"disk_bytes", r->disk_bytes},
                        {"kept_bytes", r->kept_bytes},
                        {"omitted_bytes", r->omitted_bytes},
                        {"threads", r->threads},
                        {"python", r->python_version},
                        {"omitted", r->omitted},
                        {"warnings", r->warnings}};
    if (r->rank) j["rank"] = *r->rank;
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("wrote {} ({}, {} on disk; {} threads{})\n", r->path, human_size(r->file_size),
               human_size(r->disk_bytes), r->threads,
               r->python_version.empty() ? "" : ", Python " + r->python_version);
    fmt::print("pid {} was paused {:.1f} ms and runs on\n", o.pid,
               static_cast<double>(r->pause_us) / 1000.0);
    if (r->omitted_bytes > 0) {
      fmt::print("left out {} of memory ({} ranges; `hangscan core {}` lists them)\n",
                 human_size(r->omitted_bytes), r->omitted.size(), r->path);
    }
  }
  return r->warnings.empty() ? kExitComplete : kExitPartial;
}

}  // namespace

void add_gcore_dump_options(CLI::App* sub, GcoreDumpOptions& o) {
  o.option = sub->add_option("--gcore", o.mode,
                  "After grouping, write cores: one-per-group (default: a representative of "
                  "each group plus every suspect), suspects, or all")
      ->expected(0, 1)
      ->check(CLI::IsMember({"", "one-per-group", "suspects", "all"}));
  sub->add_option("--gcore-dir", o.dir, "Directory for --gcore cores")->capture_default_str();
  sub->add_option("--gcore-max-size", o.max_size, "Size cap per core (K, M, G suffixes)")
      ->capture_default_str();
}

bool write_job_cores(const JobSnapshot& job, const OutputOptions& output,
                     const GcoreDumpOptions& o) {
  auto mode = parse_gcore_mode(o.mode.empty() ? "one-per-group" : o.mode);
  auto groups = group_options(output);
  auto max = size_option(o.max_size);
  if (!mode || !groups || !max) {
    print_error(!max ? max.error().what() : "bad --gcore mode or grouping options");
    return false;
  }
  Analysis analysis = analyze(job, *groups);
  bool ok = true;
  for (std::size_t i : pick_core_members(analysis, *mode, job.processes.size())) {
    const ProcessSnapshot& p = job.processes[i];
    CoreWriteOptions opts;
    opts.dir = o.dir;
    opts.max_size = *max;
    opts.rank = p.rank;
    opts.host = p.host;
    auto r = write_core_detailed(p.pid, opts);
    if (!r) {
      print_error(fmt::format("no core of {}: {}", member_name(p), r.error().what()), r.error().hint);
      ok = false;
      continue;
    }
    fmt::print(stderr, "hangscan: core of {}{}: {} ({}, paused {:.1f} ms)\n", member_name(p),
               analysis.is_suspect(i) ? " (suspect)" : "", r->path, human_size(r->file_size),
               static_cast<double>(r->pause_us) / 1000.0);
  }
  return ok;
}

void add_gcore_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<GcoreOptions>();
  auto* sub = app.add_subcommand(
      "gcore", "Write a size-bounded core of a live process; it runs on afterwards");
  sub->add_option("-p,--pid", opts->pid, "Process id")->required()->check(CLI::PositiveNumber);
  sub->add_option("-o,--output-dir", opts->dir, "Directory for the core")->capture_default_str();
  sub->add_option("--max-size", opts->max_size,
                  "Leave out the largest anonymous memory until the core fits (K, M, G); "
                  "stacks, module data and Python memory are always kept")
      ->capture_default_str();
  sub->add_option("--signal", opts->signal,
                  "Send this signal (ABRT) for the kernel's own core instead: ends the process");
  sub->add_flag("--yes", opts->yes, "Confirm --signal, which ends the process");
  sub->add_flag("--json", opts->json, "Print the result as JSON");
  sub->add_option("--timeout-ms", opts->timeout_ms, "Deadline to stop every thread")
      ->check(CLI::Range(1, 600000))
      ->capture_default_str();
  sub->callback([opts, &action] { action = [opts] { return run_gcore(*opts); }; });
}

}  // namespace hangscan::cli
