// `hangscan gcore --pid PID`: a size-bounded core of a live process that runs on afterwards;
// `--signal ABRT --yes` for the kernel's own core instead. Also the --gcore hook of dump.
#include "gcore_cmd.h"

#include <algorithm>
#include <chrono>

#include <fmt/core.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli.h"
#include "corewrite/core_plan.h"
#include "corewrite/core_writer.h"
#include "corewrite/kernel_core.h"
#include "util/escape.h"
#include "util/parse_number.h"

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

// The kernel's core instead of ours (corewrite/kernel_core.h): the process ends, so only
// with --yes.
int send_signal(const GcoreOptions& o) {
  auto sig = parse_core_signal(o.signal);
  if (!sig) {
    print_error(sig.error());
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
  auto where = send_core_signal(o.pid, *sig);
  if (!where) {
    print_error(where.error());
    return kExitNothing;
  }
  fmt::print("sent SIG{} to pid {}; the kernel writes its core as core_pattern says: {}\n",
             sig->name, o.pid, *where);
  return kExitComplete;
}

int run_gcore(const GcoreOptions& o) {
  if (!o.signal.empty()) return send_signal(o);
  auto max = parse_size_option(o.max_size, "--max-size");
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
    return r.error().code == Errc::usage ? kExitUsage : kExitNothing;  // e.g. hangscan's own pid
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
                        {"unreadable_bytes", r->unreadable_bytes},
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
  o.option =
      sub->add_option("--gcore", o.mode,
                      "After grouping, write cores: one-per-group (default: a representative of "
                      "each group plus every suspect), suspects, or all")
          ->expected(0, 1)
          ->check(CLI::IsMember({"", "one-per-group", "suspects", "all"}));
  sub->add_option("--gcore-dir", o.dir, "Directory for --gcore cores")->capture_default_str();
  sub->add_option("--gcore-max-size", o.max_size, "Size cap per core (K, M, G suffixes)")
      ->capture_default_str();
}

Result<std::uint64_t> parse_size_option(const std::string& text, const std::string& option) {
  auto v = parse_size(text);
  if (!v || *v == 0) {
    return Error(Errc::usage, fmt::format("{} {}: not a size", option, text), 0,
                 fmt::format("give bytes with an optional K, M or G suffix, e.g. {} 512M", option));
  }
  return *v;
}

Result<JobCoresRequest> gcore_request(const GcoreDumpOptions& o) {
  auto max = parse_size_option(o.max_size, "--gcore-max-size");
  if (!max) return max.error();
  if (o.dir.empty())
    return Error(Errc::usage, "--gcore-dir is empty", 0, "give a directory for the cores");
  return JobCoresRequest{o.mode, o.dir, *max};
}

Status check_gcore_options(const GcoreDumpOptions& o) {
  if (!o.requested()) return Ok{};
  if (auto r = gcore_request(o); !r) return r.error();
  return Ok{};
}

namespace {

// "rank 3 on n2 (pid 1234, suspect)" or "pid 1234 on n2 (representative)".
std::string core_subject(const CoreOutcome& c, const std::string& role) {
  if (c.rank) return fmt::format("rank {} on {} (pid {}, {})", *c.rank, c.node, c.pid, role);
  return fmt::format("pid {} on {} ({})", c.pid, c.node, role);
}

// One line per core on stderr, the same for every mode; false when no core was written.
bool report_core(const CoreOutcome& c, const std::string& role) {
  if (!c.written()) {
    print_error(fmt::format("no core of {}: {}", core_subject(c, role), c.error), c.hint);
    return false;
  }
  fmt::print(stderr, "hangscan: core of {}: {} ({}, paused {:.1f} ms)\n",
             escape_for_text(core_subject(c, role)), escape_for_text(c.path),
             human_size(c.file_size), static_cast<double>(c.pause_us) / 1000.0);
  for (const auto& w : c.warnings) print_error(fmt::format("core {}: {}", c.path, w));
  return true;
}

// One line per core; true when every one was written.
bool report_cores(const JobCores& cores) {
  bool ok = true;
  for (std::size_t k = 0; k < cores.outcomes.size(); ++k)
    ok &= report_core(cores.outcomes[k], cores.roles[k]);
  return ok;
}

}  // namespace

bool write_job_cores(const JobSnapshot& job, const Analysis& analysis, const GcoreDumpOptions& o) {
  auto request = gcore_request(o);
  auto cores = request ? hangscan::write_job_cores(job, analysis, *request)
                       : Result<JobCores>(request.error());
  if (!cores) {
    print_error(cores.error());
    return false;
  }
  return report_cores(*cores);
}

int report_cluster_cores(int rc, const Result<JobCores>& cores, bool verbose) {
  if (!cores) {
    print_error(cores.error());
    return std::max(rc, kExitPartial);
  }
  if (cores->outcomes.empty()) {
    print_error("--gcore: no process to write a core of");
    return rc;
  }
  if (verbose) {
    for (const auto& line : cores->log)
      fmt::print(stderr, "hangscan: cores: {}\n", escape_for_text(line));
  }
  bool all = report_cores(*cores);
  for (const auto& d : cores->diagnostics) print_error(d.message, d.hint);
  fmt::print(stderr, "hangscan: {} of {} cores written in {} on {} node(s), {:.1f} s\n",
             cores->written(), cores->outcomes.size(), cores->dir, cores->nodes,
             std::chrono::duration<double>(cores->elapsed).count());
  return all ? rc : std::max(rc, kExitPartial);
}

void add_gcore_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<GcoreOptions>();
  auto* sub = app.add_subcommand(
      "gcore", "Write a size-bounded core of a live process; it runs on afterwards");
  sub->add_option("-p,--pid", opts->pid, "Process id")->required()->check(process_id());
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
      ->check(whole_number("a number of milliseconds", 1, 600000))
      ->capture_default_str();
  sub->callback([opts, &action] { action = [opts] { return run_gcore(*opts); }; });
}

}  // namespace hangscan::cli
