// `hangscan watch`: record what the processes do for a window (eBPF), or watch them until they
// stall and capture by themselves (--stall). See docs/watch.md.
#include <fmt/core.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "fanout/agent.h"
#include "fanout/agent_framing.h"
#include "fanout/hostlist.h"
#include "gcore_cmd.h"
#include "output.h"
#include "proc/process_tree.h"
#include "stall_bundle.h"
#include "stop_signals.h"
#include "watch/watch_format.h"
#include "watch/watch_writers.h"
#include "watch_slurm.h"
#include "watchdog/watch_session.h"

namespace hangscan::cli {

namespace {

struct WatchCmdOptions {
  std::vector<int> pids;
  bool subprocesses = false;
  std::string match;
  double seconds = 10;
  bool json = false;
  std::string format = "text";  // --format: watch/watch_writers.h
  std::string html_file;        // --html FILE: the page too (timelines, flame graphs)
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
  std::string node;                        // node-local: the node (pod) to report as
  std::string pod_uid;                     // node-local: only this pod's processes (node agent)
  bool end_window = false;                 // --end-window: end the node-local watch of --node
  WatchK8sTarget k8s;                      // --k8s: every pod of the selector (watch_slurm.h)
};

// The node-local part of `watch --slurm-job` (or `--k8s`: the pod's processes of --match):
// prints the agent's begin line and picks this node's processes of the job (as `hangscan
// agent` does). nullopt: go on watching `o.pids`;
// else the exit code (nothing to watch here: an empty report was already sent).
std::optional<int> start_node_local(WatchCmdOptions& o, const std::string& node) {
  if (!write_stdout(frame_begin(node))) return kExitNothing;
  AgentOptions a;
  a.job_id = o.slurm_job;
  a.match = o.slurm_job.empty() ? o.match : std::string();
  a.node = node;
  a.pod_uid = o.pod_uid;
  a.exclude_steps = o.exclude_steps;
  std::vector<Diagnostic> diags;
  auto procs = discover_job_processes(a, diags);
  if (!procs) {
    print_error(procs.error());
    write_stdout(frame_failure(node, procs.error().what()));
    return kExitNothing;
  }
  for (const auto& dp : *procs) o.pids.push_back(dp.pid);
  o.match.clear();  // the ones found now: a new match would be ourselves or a later process
  // The report must reach the front end before its deadline for this node.
  if (o.timeout_ms > 0)
    o.seconds = std::max(0.1, std::min(o.seconds, (o.timeout_ms - 5000) / 1000.0));
  if (!o.pids.empty()) return std::nullopt;
  WatchSessionResult empty;
  empty.report.recorder = "none";
  empty.report.start_ns = monotonic_ns();
  empty.report.diagnostics = std::move(diags);
  write_stdout(frame_document(node, node_watch_document(empty, node, false).dump()));
  return kExitNothing;
}

// The session's hooks: what it says, printed; --logs and --gcore for its bundles.
WatchSessionHooks session_hooks(const WatchCmdOptions& o, StopSignals& stop) {
  WatchSessionHooks h;
  h.stop_pending = [&stop] { return stop.pending(); };
  h.warning = [](const Error& e) { print_error(e); };
  h.recording = [&o](std::size_t n, bool fallback) {
    // Says when recording has begun (scripts and tests wait for this line).
    fmt::print(stderr, "hangscan: recording {} process{} ({}){}\n", n, n == 1 ? "" : "es",
               fallback ? "ptrace samples" : "eBPF",
               o.stall > 0 ? "" : "; SIGINT ends the window and reports");
    std::fflush(stderr);
  };
  h.unread_logs = print_log_problems;
  h.after_bundle = [&o](const JobSnapshot& job, const Analysis& analysis, const std::string& dir) {
    if (!o.gcore.requested()) return;
    GcoreDumpOptions cores = o.gcore;
    if (o.gcore_dir == nullptr || o.gcore_dir->count() == 0) cores.dir = dir;
    write_job_cores(job, analysis, cores);
  };
  h.stalled = print_stall;
  return h;
}

WatchSessionRequest session_request(const WatchCmdOptions& o) {
  WatchSessionRequest r;
  r.watch.pids = o.pids;
  r.watch.subprocesses = o.subprocesses;
  r.watch.match = o.match;
  r.watch.recorder.sample_hz = o.rate;
  r.watch.recorder.wait_threshold_ns = static_cast<std::uint64_t>(o.wait_ms) * 1'000'000;
  r.watch.recorder.follow_children = o.subprocesses;
  r.ptrace = o.ptrace;
  r.seconds = o.seconds;
  r.stall = o.stall;
  r.log_file = o.log_file;
  r.output_dir = o.output_dir;
  r.once = o.once;
  r.node_local = o.node_local;
  r.logs.paths = o.logs;
  auto g = group_options(OutputOptions{});
  if (g) r.group = *g;
  return r;
}

// The front end of --slurm-job: its flags checked and mapped.
int run_watch_slurm_front(const WatchCmdOptions& o) {
  const bool k8s = !o.k8s.selector.empty();
  if (!o.pids.empty() || (!k8s && !o.match.empty()) || o.ptrace || o.gcore.requested() ||
      (k8s && !o.slurm_job.empty())) {
    print_error(
        "--slurm-job and --k8s take the job's ranks on every node; --pid, --ptrace, --gcore, "
        "--match (but with --k8s) and both at once do not go with them",
        "for cores of a job's ranks, run 'hangscan --slurm-job ID --gcore' or 'hangscan k8s "
        "SELECTOR --gcore'");
    return kExitUsage;
  }
  if (o.stall > 0 && o.output_dir.empty()) {
    print_error("--stall needs --output DIR (where the bundle is written)",
                "see 'hangscan watch --help'");
    return kExitUsage;
  }
  if (o.stall > 0 && !output_dir_usable(o.output_dir)) return kExitUsage;
  ClusterWatchRequest r{.seconds = o.seconds,
                        .rate = o.rate,
                        .wait_ms = o.wait_ms,
                        .stall = o.stall,
                        .log_file = o.log_file,
                        .output_dir = o.output_dir,
                        .once = o.once};
  WatchSlurmOutput out{o.json ? "json" : o.format, o.html_file, o.logs, o.job_logs, ""};
  if (!o.k8s.selector.empty()) {
    WatchK8sTarget k = o.k8s;
    k.match = o.match;
    return run_watch_k8s(k, r, out);
  }
  return run_watch_slurm(o.slurm_job, r, out);
}

// The checks of the flags of a watch on this machine; nullopt when they go together.
std::optional<int> check_local_flags(const WatchCmdOptions& o) {
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
  return std::nullopt;
}

int run_watch(const WatchCmdOptions& given) {
  if (given.end_window) {
    if (given.node.empty() || !validate_host_name(given.node)) {
      print_error("--end-window needs --node POD", "it is run by 'watch --k8s' in each pod");
      return kExitUsage;
    }
    return end_node_windows(given.node);
  }
  // --html and --format are a window's: the watchdog's bundles hold their own pages.
  if ((!given.html_file.empty() || given.format != "text") && given.stall > 0) {
    print_error("--html and --format write the report of one window; not with --stall",
                "the watchdog's bundles hold report.html and timeline.html (docs/html-report.md)");
    return kExitUsage;
  }
  if (given.job_logs && (given.slurm_job.empty() || given.stall <= 0 || given.node_local)) {
    print_error("--job-logs goes with --slurm-job ID --stall", "see 'hangscan watch --help'");
    return kExitUsage;
  }
  const WatchK8sTarget& k = given.k8s;
  if (k.selector.empty() &&
      !(k.name_space.empty() && k.container.empty() && k.agent_path.empty() &&
        k.debug_image.empty() && k.node_agent.empty() && k.node_agent_namespace.empty())) {
    print_error(
        "--namespace, --container, --agent-path, --debug-image and --node-agent go with --k8s",
        "see 'hangscan watch --help'");
    return kExitUsage;
  }
  if ((!given.slurm_job.empty() || !k.selector.empty()) && !given.node_local)
    return run_watch_slurm_front(given);
  WatchCmdOptions o = given;
  // Blocked from the start, so a stop during start-up ends the window at once instead of
  // killing us. Node-local: the front end ends the window through srun, which forwards SIGUSR1
  // to its tasks (SIGTERM or SIGINT to srun would cancel the step, and the reports with it), or
  // in a pod through `watch --end-window`, which sends it.
  StopSignals stop(o.node_local ? SIGUSR1 : 0);
  const std::string node = o.node_local ? default_agent_node(o.node, true) : std::string();
  if (o.node_local) {
    if ((o.slurm_job.empty() && o.match.empty()) || !validate_host_name(node)) {
      print_error(
          "--node-local needs --slurm-job ID or --match REGEX, and a valid --node or "
          "SLURMD_NODENAME",
          "it is started by 'watch --slurm-job' and 'watch --k8s'");
      return kExitUsage;
    }
    if (auto rc = start_node_local(o, node)) return *rc;
  }
  if (auto rc = check_local_flags(o)) return *rc;
  auto session = run_watch_session(session_request(o), session_hooks(o, stop));
  // Node-local: the front end repeats SIGUSR1 until the step ends; once the window is over it
  // must not kill us (the mask is restored when `stop` goes).
  if (o.node_local) std::signal(SIGUSR1, SIG_IGN);
  if (!session) {
    print_error(session.error());
    if (o.node_local) write_stdout(frame_failure(node, session.error().what()));
    return session.error().code == Errc::usage ? kExitUsage : kExitNothing;
  }
  if (o.node_local) {
    nlohmann::json j = node_watch_document(*session, node, o.stall > 0);
    return write_stdout(frame_document(node, j.dump())) ? kExitComplete : kExitNothing;
  }
  if (o.stall > 0) return kExitComplete;  // stopped, or --once after its bundle
  const WatchReport& report = session->report;
  WatchDocument doc{watch_json(report), watch_text(report)};
  if (!write_stdout(find_watch_writer(o.json ? "json" : o.format)->render(doc)))
    return kExitNothing;
  if (!o.html_file.empty() && !write_page_file(find_watch_writer("html")->render(doc), o.html_file))
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
  sub->add_option("--format", opts->format, "Output format of the window's report")
      ->check(CLI::IsMember(watch_format_names()))
      ->capture_default_str();
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
  sub->add_option("--k8s", opts->k8s.selector,
                  "Every rank (--match) in every pod of this label selector, through kubectl "
                  "(docs/kubernetes.md)");
  sub->add_option("-n,--namespace", opts->k8s.name_space,
                  "--k8s: the pods' namespace (default: kubectl's current one)");
  sub->add_option("--container", opts->k8s.container,
                  "--k8s: the container to watch in (default: the pod's default container)");
  sub->add_option("--agent-path", opts->k8s.agent_path, "--k8s: where hangscan is in the pods");
  sub->add_option("--debug-image", opts->k8s.debug_image,
                  "--k8s: watch from an ephemeral container of IMAGE (kubectl debug --target)");
  sub->add_option("--node-agent", opts->k8s.node_agent,
                  "--k8s: watch from the pods of this hostPID DaemonSet (label selector), the one "
                  "on each pod's node (eBPF by host pid)");
  sub->add_option("--node-agent-namespace", opts->k8s.node_agent_namespace,
                  "--k8s: the namespace of the --node-agent pods (default: kubectl's current one)");
  sub->add_flag("--node-local", opts->node_local,
                "Internal: one node's part of --slurm-job or --k8s (started by srun, kubectl)")
      ->group("");
  sub->add_option("--pod-uid", opts->pod_uid,
                  "Internal (--node-local): only the processes of this pod (k8s --node-agent)")
      ->group("");
  sub->add_option("--node", opts->node, "Internal (--node-local): the node (pod) to report as")
      ->group("");
  sub->add_flag("--end-window", opts->end_window,
                "Internal: end the window of the node-local watch of --node (watch --k8s)")
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
