// `hangscan core FILE...`: stacks, crash explanation and grouping from core files.
//
// Why one command for many cores: a crashed job leaves one core per rank; reading them
// together shares the symbol work (one SymbolCache: the same build-ids are symbolized once)
// and groups the ranks exactly as live mode does, so the odd core stands out.
#include <fmt/core.h>
#include <time.h>

#include <array>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "capture/capture.h"
#include "capture/crash_explainer.h"
#include "cli.h"
#include "output.h"
#include "discovery/discovery.h"
#include "discovery/environ_memory.h"
#include "target/core_target.h"
#include "util/contain.h"
#include "util/parse_number.h"

namespace hangscan::cli {

namespace {

struct CoreCmdOptions {
  std::vector<std::string> files;
  std::string exe;
  std::string sysroot;
  std::vector<std::string> lib_paths;
  std::string unwinder = "libdw";
  bool no_python = false;
  bool python_only = false;
  bool locals = false;
  bool verbose = false;
  OutputOptions output;
};

// "core.rank3", "rank-12.core", "core_rank_0.zst": a rank in the file name, for cores whose
// environment does not name one.
std::optional<int> rank_from_file_name(const std::string& path) {
  auto slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  static const std::regex kRank(R"((?:^|[^a-z])rank[-_.]?([0-9]{1,7})(?:[^0-9]|$))",
                                std::regex::icase);
  std::smatch m;
  if (std::regex_search(base, m, kRank)) return parse_int<int>(m[1].str());
  return std::nullopt;
}

// CPU seconds of this process (all threads), for `-v`'s per-phase timing.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Where the time of a run over many cores goes: summed over the cores, per phase.
class PhaseClock {
 public:
  enum Phase { open, capture, environ, crash, report, kCount };
  void start() { last_ = cpu_seconds(); }
  void lap(Phase p) {
    double now = cpu_seconds();
    spent_[p] += now - last_;
    last_ = now;
  }
  std::string summary() const {
    static constexpr std::array<const char*, kCount> kNames = {"open", "capture", "environ",
                                                               "crash", "report"};
    std::string out = "CPU time by phase:";
    for (int i = 0; i < kCount; ++i) out += fmt::format(" {} {:.3f} s", kNames[i], spent_[i]);
    return out;
  }

 private:
  double last_ = 0;
  std::array<double, kCount> spent_{};
};

Diagnostic error_diagnostic(const Error& e) {
  Diagnostic d;
  d.severity = Diagnostic::Severity::error;
  d.message = e.what();
  d.hint = e.hint;
  return d;
}

// Opens one core and adds its snapshot (or the reason it could not be read) to `job`.
void read_one_core(const std::string& file, const CoreOpenOptions& open_opts, const CaptureOptions& copt,
                   SymbolCache& symbols, PhaseClock& clock, JobSnapshot& job) {
  auto target = open_core_target(file, open_opts);
  clock.lap(PhaseClock::open);
  if (!target) {
    print_error(target.error());
    job.diagnostics.push_back(error_diagnostic(target.error()));
    return;
  }
  ProcessSnapshot snap = capture_process(**target, copt, symbols);
  clock.lap(PhaseClock::capture);
  apply_rank_info(snap, read_environment(**target));
  if (!snap.rank) {
    if (auto r = rank_from_file_name(file)) {
      snap.rank = r;
      snap.role = "rank";
    }
  }
  clock.lap(PhaseClock::environ);
  if (snap.core) snap.core->annotations = explain_crash(**target, snap);
  if (snap.world_size) {
    job.expected_world_size = std::max(job.expected_world_size.value_or(0), *snap.world_size);
  }
  job.processes.push_back(std::move(snap));
  target->reset();   // the core's mapping and files are released before the next one
  clock.lap(PhaseClock::crash);
}

int run_core(const CoreCmdOptions& o) {
  CaptureOptions copt;
  copt.unwinder = o.unwinder == "libunwind" ? UnwinderKind::libunwind : UnwinderKind::libdw;
  copt.merge_native = !o.python_only;   // cores: native and Python frames interleaved
  copt.python = !o.no_python;
  copt.locals = o.locals;
  copt.kernel_stacks = false;
  std::vector<std::string> log;
  if (o.verbose) copt.log = &log;
  CoreOpenOptions open_opts{o.exe, o.sysroot, o.lib_paths, std::make_shared<ModuleFileCache>()};

  SymbolCache symbols;   // shared by every core: same build-ids, symbolized once
  JobSnapshot job;
  PhaseClock clock;
  clock.start();
  for (const auto& file : o.files) {
    auto failure = failure_of([&] { read_one_core(file, open_opts, copt, symbols, clock, job); });
    if (failure) {
      Error e(Errc::internal, fmt::format("core {}: {}", file, *failure), 0, internal_error_hint());
      print_error(e);
      job.diagnostics.push_back(error_diagnostic(e));
    }
  }
  for (const auto& line : log) fmt::print(stderr, "hangscan: {}\n", line);
  if (job.processes.empty()) {
    if (o.files.size() > 1) print_error("none of the cores could be read");
    return kExitNothing;
  }
  bool written = write_report(job, o.output);
  clock.lap(PhaseClock::report);
  if (o.verbose) fmt::print(stderr, "hangscan: {}\n", clock.summary());
  if (!written) return kExitNothing;
  return exit_code_for(job);
}

}  // namespace

void add_core_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<CoreCmdOptions>();
  auto* sub = app.add_subcommand(
      "core", "Stacks of every thread of core files, the crash explained, cores grouped by rank");
  sub->add_option("files", opts->files, "Core files (plain, or systemd-coredump .zst/.lz4)")
      ->required();
  sub->add_option("--exe", opts->exe, "The executable that crashed (default: found from the core)");
  sub->add_option("--sysroot", opts->sysroot,
                  "Directory holding the crashed machine's files (paths in the core are "
                  "looked up under it)");
  sub->add_option("--lib-path", opts->lib_paths,
                  "Directory searched for libraries by file name (repeatable)");
  sub->add_option("--unwinder", opts->unwinder, "Native unwinder")
      ->check(CLI::IsMember({"libdw", "libunwind"}))
      ->capture_default_str();
  sub->add_flag("--no-python", opts->no_python, "Do not read Python frames");
  sub->add_flag("--python-only", opts->python_only,
                "Show Python frames only where a process runs Python (no native interleaving)");
  sub->add_flag("--locals", opts->locals, "Show Python local variables");
  sub->add_flag("-v,--verbose", opts->verbose, "Say how the interpreter was found and where the time went");
  add_output_options(sub, opts->output);
  sub->callback([&action, opts] {
    action = [opts] { return run_core(*opts); };
  });
}

}  // namespace hangscan::cli
