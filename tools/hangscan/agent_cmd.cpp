// `hangscan agent`: runs on each node of a fan-out (started by srun or pdsh, not by people).
//
// It prints its begin line at once (so the front end knows the node is alive), captures, and
// prints the node's snapshot in the agent wire format, framed for the line-cutting relays in
// between (fanout/agent_framing.h). With --write-core NODE:PID[:RANK] (the core round of --gcore)
// it writes the cores of its own node instead and answers which were written, or why not
// (fanout/core_round.h). Whatever goes wrong, the front end gets a `fail` line with the
// reason rather than silence. Nothing but frames goes to stdout.
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "corewrite/member_core.h"
#include "fanout/agent.h"
#include "fanout/agent_framing.h"
#include "fanout/hostlist.h"
#include "fanout_cli.h"
#include "gcore_cmd.h"
#include "output.h"
#include "report/agent_format.h"

namespace hangscan::cli {

namespace {

struct AgentCliOptions {
  std::string job_id;
  std::string node;
  std::vector<std::string> exclude_steps;
  std::optional<double> job_start;
  std::string match;
  std::string pod_uid;
  int timeout_ms = 25000;
  bool raw = false;
  CaptureFlags capture;
  std::vector<std::string> write_core;  // the core round: NODE:PID[:RANK] ...
  std::string gcore_dir = ".";
  std::string gcore_max_size = "256M";
};

// False (said on stderr) when stdout could not take it: the front end then gets nothing.
bool emit(const std::string& text) { return write_stdout(text); }

// The agent's end of the core round: its own node's cores, one outcome each.
int run_core_round(const AgentCliOptions& o, const AgentOptions& a, const std::string& frame_node) {
  auto fail = [&](const Error& e) {
    print_error(e);
    if (!o.raw) emit(frame_failure(frame_node, e.what()));
    return e.code == Errc::usage ? kExitUsage : kExitNothing;
  };
  std::vector<CoreRequest> requests;
  for (const auto& text : o.write_core) {
    auto r = parse_core_request(text);
    if (!r) return fail(r.error());
    requests.push_back(std::move(*r));
  }
  auto max = parse_size_option(o.gcore_max_size, "--gcore-max-size");
  if (!max) return fail(max.error());
  if (!o.raw) emit(frame_begin(frame_node));
  auto write = [&](const CoreRequest& r, const Deadline& deadline) {
    return write_member_core(r, o.gcore_dir, *max, deadline);
  };
  auto outcomes = run_core_agent(a, requests, write);
  if (!outcomes) return fail(outcomes.error());
  std::string doc = write_core_outcomes_json(a.node, *outcomes);
  return emit(o.raw ? doc + "\n" : frame_document(frame_node, doc)) ? kExitComplete : kExitNothing;
}

int run_agent_command(const AgentCliOptions& o) {
  const bool slurm_mode = !o.job_id.empty();
  if (slurm_mode == !o.match.empty()) {
    print_error("agent needs exactly one of --slurm-job ID and --match REGEX",
                "see 'hangscan agent --help'");
    return kExitUsage;
  }
  AgentOptions a;
  a.job_id = o.job_id;
  a.node = default_agent_node(o.node, slurm_mode);
  a.exclude_steps = o.exclude_steps;
  a.job_start = o.job_start;
  a.match = o.match;
  a.pod_uid = o.pod_uid;
  a.capture = live_capture_options(o.capture);
  a.timeout = std::chrono::milliseconds(o.timeout_ms);
  // The node name goes into every frame line: an unusable one is reported, not framed.
  const std::string frame_node =
      validate_host_name(a.node) ? a.node : std::string("invalid-node-name");

  if (!o.write_core.empty()) return run_core_round(o, a, frame_node);
  if (!o.raw) emit(frame_begin(frame_node));
  auto job = run_agent(a);
  if (!job) {
    print_error(job.error());
    if (!o.raw) emit(frame_failure(frame_node, job.error().what()));
    return job.error().code == Errc::usage ? kExitUsage : kExitNothing;
  }
  std::string doc = write_agent_json(*job);
  return emit(o.raw ? doc + "\n" : frame_document(frame_node, doc)) ? kExitComplete : kExitNothing;
}

}  // namespace

void add_agent_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<AgentCliOptions>();
  auto* sub =
      app.add_subcommand("agent", "Node agent of --slurm-job and pdsh (prints framed agent JSON)");
  sub->add_option("--slurm-job", opts->job_id, "Capture the tasks of this Slurm job on this node");
  sub->add_option("--node", opts->node,
                  "Node name to report (default: SLURMD_NODENAME, else the host name)");
  sub->add_option("--exclude-step", opts->exclude_steps,
                  "Leave out this step of the job (hangscan's own)");
  sub->add_option("--job-start", opts->job_start,
                  "The Slurm job's start (Unix seconds): the window of its deaths on this node");
  sub->add_option("--match", opts->match, "Capture processes whose command line matches REGEX");
  sub->add_option("--pod-uid", opts->pod_uid,
                  "With --match: only processes of this Kubernetes pod (by their cgroup; "
                  "k8s --node-agent)");
  sub->add_option("--timeout-ms", opts->timeout_ms, "Deadline for the whole node")
      ->check(whole_number("a number of milliseconds", 100, 86400000))
      ->capture_default_str();
  sub->add_flag("--raw", opts->raw, "Print the bare agent JSON document (no framing)");
  add_capture_flags(sub, opts->capture);
  sub->add_option(
      "--write-core", opts->write_core,
      "Core round of --gcore: write a core of PID if it runs on NODE and is still the job's "
      "(NODE:PID[:RANK], repeatable)");
  sub->add_option("--gcore-dir", opts->gcore_dir, "Directory for --write-core cores")
      ->capture_default_str();
  sub->add_option("--gcore-max-size", opts->gcore_max_size, "Size cap per core (K, M, G)")
      ->capture_default_str();
  sub->callback([opts, &action] { action = [opts] { return run_agent_command(*opts); }; });
}

}  // namespace hangscan::cli
