// `hangscan agent`: runs on each node of a fan-out (started by srun or pdsh, not by people).
//
// It prints its begin line at once (so the front end knows the node is alive), captures, and
// prints the node's snapshot in the agent wire format, framed for the line-cutting relays in
// between (fanout/frames.h). Whatever goes wrong, the front end gets a `fail` line with the
// reason rather than silence. Nothing but frames goes to stdout.
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "fanout/agent.h"
#include "fanout/frames.h"
#include "fanout/hostlist.h"
#include "fanout_cli.h"
#include "report/agent_format.h"

namespace hangscan::cli {

namespace {

struct AgentCliOptions {
  std::string job_id;
  std::string node;
  std::vector<std::string> exclude_steps;
  std::string match;
  int timeout_ms = 25000;
  bool raw = false;
  CaptureFlags capture;
};

void emit(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

int run_agent_command(const AgentCliOptions& o) {
  const bool slurm_mode = !o.job_id.empty();
  if (slurm_mode == !o.match.empty()) {
    print_error("agent needs exactly one of --slurm-job ID and --match REGEX", "see 'hangscan agent --help'");
    return kExitUsage;
  }
  AgentOptions a;
  a.job_id = o.job_id;
  a.node = default_agent_node(o.node, slurm_mode);
  a.exclude_steps = o.exclude_steps;
  a.match = o.match;
  a.capture = capture_options_from(o.capture);
  a.timeout = std::chrono::milliseconds(o.timeout_ms);
  // The node name goes into every frame line: an unusable one is reported, not framed.
  const std::string frame_node = validate_host_name(a.node) ? a.node : std::string("invalid-node-name");

  if (!o.raw) emit(frame_begin(frame_node));
  auto job = run_agent(a);
  if (!job) {
    print_error(job.error());
    if (!o.raw) emit(frame_failure(frame_node, job.error().what()));
    return job.error().code == Errc::usage ? kExitUsage : kExitNothing;
  }
  std::string doc = write_agent_json(*job);
  emit(o.raw ? doc + "\n" : frame_document(frame_node, doc));
  return kExitComplete;
}

}  // namespace

void add_agent_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<AgentCliOptions>();
  auto* sub = app.add_subcommand("agent", "Node agent of --slurm-job and pdsh (prints framed agent JSON)");
  sub->add_option("--slurm-job", opts->job_id, "Capture the tasks of this Slurm job on this node");
  sub->add_option("--node", opts->node, "Node name to report (default: SLURMD_NODENAME, else the host name)");
  sub->add_option("--exclude-step", opts->exclude_steps, "Leave out this step of the job (hangscan's own)");
  sub->add_option("--match", opts->match, "Capture processes whose command line matches REGEX");
  sub->add_option("--timeout-ms", opts->timeout_ms, "Deadline for the whole node")
      ->check(CLI::Range(100, 86400000))
      ->capture_default_str();
  sub->add_flag("--raw", opts->raw, "Print the bare agent JSON document (no framing)");
  add_capture_flags(sub, opts->capture);
  sub->callback([opts, &action] { action = [opts] { return run_agent_command(*opts); }; });
}

}  // namespace hangscan::cli
