// `hangscan watch`: record what the processes do for a window (eBPF), or watch them until they
// stall and capture by themselves (--stall). See docs/watch.md.
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "discovery/discovery.h"
#include "fanout/agent.h"
#include "fanout/agent_framing.h"
#include "fanout/hostlist.h"
#include "gcore_cmd.h"
#include "jobs/job_loop.h"
#include "output.h"
#include "proc/process_tree.h"
#include "stall_bundle.h"
#include "stop_signals.h"
#include "watch/cluster_watch.h"
#include "watch/ptrace_recorder.h"
#include "watch/watch_format.h"
#include "watch/watcher.h"
#include "watch_slurm.h"

namespace hangscan::cli {

namespace {

struct WatchCmdOptions {
  std::vector<int> pids;
  bool subprocesses = false;
  std::string match;
  double seconds = 10;
  bool json = false;
  std::string html_file;  // --html FILE: the page too (timelines, flame graphs)
  int rate = 19;
  int wait_ms = 10;
  double stall = 0;
  std::string log_file;
  std::string output_dir;
  bool once = false;
  std::vector<std::string> logs;           // --logs: the job's logs, beside the bundle's stacks
  bool job_logs = false;                   // --job-logs: with --slurm-job --stall
  GcoreDumpOptions gcore;                  // --gcore: cores in the bundle (as dump --gcore)
  CLI::Option* gcore_dir = nullptr;        // --gcore-dir given: cores there instead
  bool ptrace = false;                     // --ptrace: the fallback sampler even where eBPF works
  std::string slurm_job;                   // --slurm-job: every node of the job (watch_slurm.h)
  bool node_local = false;                 // --node-local: one node's part of --slurm-job
  std::vector<std::string> exclude_steps;  // node-local: the front end's own step
  long long timeout_ms = 0;                // node-local: the front end's deadline for this node
};

// CLOCK_MONOTONIC ns of the newest progress of any of `ranks`; 0 when none is known.
std::int64_t newest_progress_ns(const Watcher& w, const std::vector<int>& ranks) {
  std::int64_t newest = 0;
  for (int pid : ranks) {
    auto it = w.last_progress().find(pid);
    if (it != w.last_progress().end()) newest = std::max(newest, it->second);
  }
  return newest;
}

// The watchdog's verdict: why the job is stalled now, or "" when it is not.
std::string stall_reason(const Watcher& w, const WatchCmdOptions& o,
                         const std::vector<int>& ranks) {
  if (auto log = log_stall(o.log_file, o.stall); !log.empty()) return log;
  std::int64_t newest = newest_progress_ns(w, ranks);
  if (ranks.empty() || newest == 0) return {};
  double idle = static_cast<double>(monotonic_ns() - newest) / 1e9;
  if (idle >= o.stall) return fmt::format("no watched rank made progress for {:.0f} s", idle);
  return {};
}

// The capture `dump` takes, the recorder's report, into DIR/stall-TIME/.
Result<std::string> write_bundle(Watcher& w, const WatchCmdOptions& o, const std::string& reason) {
  // The recorder's view first: the capture's ptrace stops restart the threads' system calls.
  WatchReport rec = w.report();
  std::vector<DiscoveredProcess> procs;
  DiscoveryOptions dopt;
  dopt.pids = w.pids();
  std::vector<Diagnostic> diags;
  if (!dopt.pids.empty()) {
    auto found = discover(dopt, &diags);
    if (found) procs = std::move(*found);
  }
  JobOptions run;
  run.capture.merge_native = true;
  run.explain_deaths = true;
  run.resolve_waits = true;
  std::vector<JobMember> members(procs.size());
  for (std::size_t i = 0; i < procs.size(); ++i) members[i].process = std::move(procs[i]);
  SymbolCache symbols;
  JobSnapshot job = run_job(members, run, symbols, std::move(diags));
  auto g = group_options(OutputOptions{});
  Analysis analysis = analyze(job, g ? *g : GroupOptions{});
  if (!o.logs.empty()) join_job_logs(job, analysis, o.logs);
  auto dir =
      write_stall_bundle(o.output_dir, reason, job, analysis, {watch_text(rec), watch_json(rec)});
  if (dir && o.gcore.requested()) {  // after the reports: a core that fails leaves them whole
    GcoreDumpOptions cores = o.gcore;
    if (o.gcore_dir == nullptr || o.gcore_dir->count() == 0) cores.dir = *dir;
    write_job_cores(job, analysis, cores);
  }
  return dir;
}

// The node-local part of `watch --slurm-job`: prints the agent's begin line and picks this
// node's processes of the job (as `hangscan agent` does). nullopt: go on watching `o.pids`;
// else the exit code (nothing to watch here: an empty report was already sent).
std::optional<int> start_node_local(WatchCmdOptions& o, const std::string& node) {
  if (!write_stdout(frame_begin(node))) return kExitNothing;
  AgentOptions a;
  a.job_id = o.slurm_job;
  a.node = node;
  a.exclude_steps = o.exclude_steps;
  std::vector<Diagnostic> diags;
  auto procs = discover_job_processes(a, diags);
  if (!procs) {
    print_error(procs.error());
    write_stdout(frame_failure(node, procs.error().what()));
    return kExitNothing;
  }
  for (const auto& dp : *procs) o.pids.push_back(dp.pid);
  // The report must reach the front end before its deadline for this node.
  if (o.timeout_ms > 0)
    o.seconds = std::max(0.1, std::min(o.seconds, (o.timeout_ms - 5000) / 1000.0));
  if (!o.pids.empty()) return std::nullopt;
  WatchReport empty;
  empty.recorder = "none";
  empty.diagnostics = std::move(diags);
  nlohmann::json j = watch_json(empty);
  stamp_node_watch(j, node, monotonic_ns(), read_node_clock());
  write_stdout(frame_document(node, j.dump()));
  return kExitNothing;
}

int run_watch(const WatchCmdOptions& given) {
  // --html is a window's page: the watchdog's bundles hold their own pages.
  if (!given.html_file.empty() && (given.stall > 0 || !given.slurm_job.empty())) {
    print_error(
        "--html writes the page of one window on this machine; not with --stall or "
        "--slurm-job",
        "the watchdog's bundles hold report.html and timeline.html (docs/html-report.md)");
    return kExitUsage;
  }
  if (given.job_logs && (given.slurm_job.empty() || given.stall <= 0 || given.node_local)) {
    print_error("--job-logs goes with --slurm-job ID --stall", "see 'hangscan watch --help'");
    return kExitUsage;
  }
  if (!given.slurm_job.empty() && !given.node_local) {
    if (!given.pids.empty() || !given.match.empty() || given.ptrace || given.gcore.requested()) {
      print_error(
          "--slurm-job takes the job's ranks on every node; --pid, --match, --ptrace and --gcore "
          "do not go with it",
          "for cores of a Slurm job's ranks, run 'hangscan --slurm-job ID --gcore'");
      return kExitUsage;
    }
    if (given.stall > 0 && given.output_dir.empty()) {
      print_error("--stall needs --output DIR (where the bundle is written)",
                  "see 'hangscan watch --help'");
      return kExitUsage;
    }
    if (given.stall > 0 && !output_dir_usable(given.output_dir)) return kExitUsage;
    return run_watch_slurm({given.slurm_job, given.seconds, given.rate, given.wait_ms, given.json,
                            given.stall, given.log_file, given.output_dir, given.once, given.logs,
                            given.job_logs});
  }
  WatchCmdOptions o = given;
  // Blocked from the start, so a stop during start-up ends the window at once instead of
  // killing us. Node-local: the front end ends the window through srun, which forwards SIGUSR1
  // to its tasks (SIGTERM or SIGINT to srun would cancel the step, and the reports with it).
  StopSignals stop(o.node_local ? SIGUSR1 : 0);
  const std::string node = o.node_local ? default_agent_node("", true) : std::string();
  if (o.node_local) {
    if (o.slurm_job.empty() || !validate_host_name(node)) {
      print_error("--node-local needs --slurm-job ID and a valid SLURMD_NODENAME",
                  "it is started by 'watch --slurm-job'");
      return kExitUsage;
    }
    if (auto rc = start_node_local(o, node)) return *rc;
  }
  if (o.pids.empty() && o.match.empty()) {
    print_error("watch needs --pid PID or --match REGEX", "see 'hangscan watch --help'");
    return kExitUsage;
  }
  if (o.gcore.requested() && o.stall <= 0) {
    print_error("--gcore goes with --stall (the cores are part of the stall bundle)",
                "for cores now, run 'hangscan dump --gcore'");
    return kExitUsage;
  }
  if (auto st = check_gcore_options(o.gcore); !st) {
    print_error(st.error());
    return kExitUsage;
  }
  if (o.stall > 0 && o.output_dir.empty() && !o.node_local) {
    print_error("--stall needs --output DIR (where the bundle is written)",
                "see 'hangscan watch --help'");
    return kExitUsage;
  }
  if (o.stall > 0 && !o.output_dir.empty() && !output_dir_usable(o.output_dir)) return kExitUsage;
  // Checked before the recorder loads: a bad pattern costs no eBPF program.
  if (auto re = compile_match_pattern(o.match); !o.match.empty() && !re) {
    print_error(re.error());
    return kExitUsage;
  }
  WatchOptions wopt;
  wopt.pids = o.pids;
  wopt.subprocesses = o.subprocesses;
  wopt.match = o.match;
  wopt.recorder.sample_hz = o.rate;
  wopt.recorder.wait_threshold_ns = static_cast<std::uint64_t>(o.wait_ms) * 1'000'000;
  wopt.recorder.follow_children = o.subprocesses;
  wopt.recorder.data_progress = o.stall > 0;
  std::unique_ptr<Recorder> recorder;
  if (!o.ptrace) {
    auto r = Recorder::start(wopt.recorder);
    if (!r) {
      const Error& e = r.error();
      print_error(
          e.what() +
              fmt::format(
                  "; falling back to ptrace samples at {} Hz (each stops the process 1-5 ms: "
                  "0.2-1% of its time, counted in the report; no waits, signals "
                  "or exits)",
                  kPtraceFallbackHz),
          e.hint);
    } else {
      recorder = std::move(*r);
    }
  }
  bool fallback = recorder == nullptr;
  if (fallback) {
    wopt.recorder.sample_hz = kPtraceFallbackHz;
    recorder = make_ptrace_recorder(wopt.recorder);
  }
  std::vector<Diagnostic> diags;
  auto watcher = Watcher::start(wopt, std::move(recorder), diags);
  if (!watcher) {
    print_error(watcher.error());
    if (o.node_local) write_stdout(frame_failure(node, watcher.error().what()));
    return watcher.error().code == Errc::usage ? kExitUsage : kExitNothing;
  }
  Watcher& w = **watcher;
  // Says when recording has begun (scripts and tests wait for this line).
  fmt::print(stderr, "hangscan: recording {} process{} ({}){}\n", w.pids().size(),
             w.pids().size() == 1 ? "" : "es", fallback ? "ptrace samples" : "eBPF",
             o.stall > 0 ? "" : "; SIGINT ends the window and reports");
  std::fflush(stderr);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.seconds);
  bool armed = true;
  std::string node_stall;  // node-local --stall: why this node stopped (the front end judges)
  while (!stop.pending()) {
    if ((o.stall <= 0 || o.node_local) && std::chrono::steady_clock::now() >= deadline) break;
    if (auto st = w.step(std::chrono::milliseconds(200)); !st) {
      print_error(st.error());
      break;
    }
    if (o.stall <= 0 || o.node_local) {
      if (w.all_gone()) break;
      if (o.stall <= 0) continue;
    }
    std::string reason = stall_reason(w, o, w.rank_pids());
    if (!reason.empty() && armed) {
      w.flush();  // the samples not yet finished may hold progress
      reason = stall_reason(w, o, w.rank_pids());
    }
    if (reason.empty()) {
      armed = true;
      continue;
    }
    if (!armed) continue;  // one bundle per stall: fires again after progress resumed
    armed = false;
    if (o.node_local) {  // this node's ranks stopped: its report goes to the front end
      node_stall = reason;
      break;
    }
    auto dir = write_bundle(w, o, reason);
    if (!dir) {
      print_error(dir.error());
      return kExitNothing;
    }
    print_stall(reason, *dir);
    if (o.once) return kExitComplete;
  }
  // Node-local: the front end repeats SIGUSR1 until the step ends; once the window is over it
  // must not kill us (the mask is restored when `stop` goes).
  if (o.node_local) std::signal(SIGUSR1, SIG_IGN);
  WatchReport report = w.report();
  if (fallback) report.recorder = "ptrace";
  for (auto& d : diags) report.diagnostics.push_back(std::move(d));
  if (o.stall > 0 && !o.node_local) return kExitComplete;
  if (o.node_local) {
    nlohmann::json j = watch_json(report);
    if (o.stall > 0) {  // what the front end's watchdog judges across the nodes
      // The newest progress seen in this window (null: none; a rank's watch start is not).
      std::int64_t newest = newest_progress_ns(w, w.rank_pids());
      nlohmann::json last = nullptr;
      if (newest > report.start_ns)
        last = read_node_clock().boot_unix_s + static_cast<double>(newest) / 1e9;
      j["stall"] = {{"reason", node_stall.empty() ? nlohmann::json() : nlohmann::json(node_stall)},
                    {"last_progress_unix_s", last}};
    }
    stamp_node_watch(j, node, report.start_ns, read_node_clock());
    return write_stdout(frame_document(node, j.dump())) ? kExitComplete : kExitNothing;
  }
  std::string text = o.json ? watch_json(report).dump(2) + "\n" : watch_text(report);
  if (!write_stdout(text)) return kExitNothing;
  if (!o.html_file.empty() && !write_page_file(watch_html(report), o.html_file))
    return kExitNothing;
  return report.processes.empty() ? kExitNothing : kExitComplete;
}

}  // namespace

void add_watch_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<WatchCmdOptions>();
  auto* sub = app.add_subcommand(
      "watch", "Record what processes do over time (eBPF); with --stall, capture when they stop");
  sub->add_option("-p,--pid", opts->pids, "Process id (repeatable)")->check(process_id());
  sub->add_flag("--subprocesses", opts->subprocesses,
                "Also every descendant of each --pid, and those it starts");
  sub->add_option("--match", opts->match,
                  "Processes whose command line matches REGEX (like pgrep -f)");
  sub->add_option("--for", opts->seconds, "Seconds to watch (SIGINT ends sooner and still reports)")
      ->check(finite_number("a number of seconds", 0.1, 86400.0))
      ->capture_default_str();
  sub->add_flag("--json", opts->json, "JSON output (docs/output-schema.md, 'watch')");
  sub->add_option(
      "--html", opts->html_file,
      "Also write the HTML page (timelines, flame graphs: docs/html-report.md) to FILE");
  sub->add_option("--rate", opts->rate, "On-CPU samples per second per CPU")
      ->check(whole_number("a rate in Hz", 1, 1000))
      ->capture_default_str();
  sub->add_option("--wait-ms", opts->wait_ms, "A system call this long is a recorded wait")
      ->check(whole_number("a number of milliseconds", 1, 3600000))
      ->capture_default_str();
  sub->add_option("--stall", opts->stall,
                  "Watchdog: capture when no rank made progress for SECONDS")
      ->check(finite_number("a number of seconds", 1.0, 86400.0));
  sub->add_option("--log", opts->log_file,
                  "Watchdog: also a stall when FILE was not written for --stall seconds");
  sub->add_option("--output", opts->output_dir, "Watchdog: where stall bundles are written");
  sub->add_option("--logs", opts->logs,
                  "Watchdog: the job's logs; each rank's last line beside its stack in the bundle");
  sub->add_flag("--job-logs", opts->job_logs,
                "Watchdog of --slurm-job: also the job's StdOut/StdErr (scontrol), as its user");
  sub->add_flag("--once", opts->once, "Watchdog: exit after the first stall bundle");
  add_gcore_dump_options(sub, opts->gcore);  // watch: the cores go into the bundle by default
  opts->gcore_dir = sub->get_option("--gcore-dir");
  opts->gcore_dir->description("Directory for --gcore cores (default: the stall bundle)");
  opts->gcore_dir->default_str("");
  sub->add_flag("--ptrace", opts->ptrace,
                "Sample with ptrace (the fallback when eBPF is not allowed)");
  sub->add_option("--slurm-job", opts->slurm_job,
                  "Every rank of this Slurm job, on every node (one srun step)");
  sub->add_flag("--node-local", opts->node_local,
                "Internal: one node's part of --slurm-job (started by srun)")
      ->group("");
  sub->add_option("--exclude-step", opts->exclude_steps,
                  "Internal (--node-local): leave out this step of the job")
      ->group("");
  sub->add_option("--timeout-ms", opts->timeout_ms,
                  "Internal (--node-local): the front end's deadline for this node")
      ->check(whole_number("a number of milliseconds", 1, 86400000))
      ->group("");
  sub->callback([opts, &action] { action = [opts] { return run_watch(*opts); }; });
}

}  // namespace hangscan::cli
