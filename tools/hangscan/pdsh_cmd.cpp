// `hangscan pdsh -w HOSTLIST --match REGEX`: the agent on every host through pdsh, merged.
#include <fmt/core.h>
#include <boost/process/search_path.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "cli.h"
#include "fanout/hostlist.h"
#include "fanout/pdsh.h"
#include "fanout_cli.h"
#include "gcore_cmd.h"
#include "proc/proc_files.h"
#include "proc/process_tree.h"

namespace hangscan::cli {

namespace {

struct PdshCliOptions {
  std::string hostlist;
  std::string hostfile;
  std::string match;
  int fanout = 32;
  std::string remote_setup;
  std::string rcmd;
  FanoutCliOptions common;
  GcoreDumpOptions gcore;
};

// -w and --hostfile together name the hosts; both validated, duplicates dropped.
Result<std::vector<std::string>> collect_hosts(const PdshCliOptions& o) {
  std::vector<std::string> hosts;
  if (!o.hostlist.empty()) {
    auto parsed = parse_hostlist(o.hostlist);
    if (!parsed) return parsed.error().with_context("-w");
    hosts = std::move(*parsed);
  }
  if (!o.hostfile.empty()) {
    auto text = read_text_file(o.hostfile, 16u << 20);
    if (!text) {
      Error e = text.error();
      e.code = Errc::usage;
      if (e.hint.empty()) e.hint = "give a readable file with one host per line: --hostfile FILE";
      return e.with_context(fmt::format("--hostfile {}", o.hostfile));
    }
    auto entries = parse_hostfile(*text);
    if (!entries) return entries.error().with_context(o.hostfile);
    for (auto& e : *entries) {
      if (std::find(hosts.begin(), hosts.end(), e.name) == hosts.end())
        hosts.push_back(std::move(e.name));
    }
  }
  if (hosts.empty()) {
    return Error(Errc::usage, "pdsh needs -w HOSTLIST or --hostfile FILE", 0,
                 "name the hosts, e.g. hangscan pdsh -w 'n[1-4]' --match REGEX");
  }
  return hosts;
}

int run_pdsh(const PdshCliOptions& o) {
  if (!cluster_options_valid(o.common, o.gcore, &o.match)) return kExitUsage;
  auto hosts = collect_hosts(o);
  if (!hosts) {
    print_error(hosts.error());
    return kExitUsage;
  }
  PdshOptions p;
  if (boost::process::search_path(p.pdsh).empty()) {
    print_error(fmt::format("'{}' is not installed here (not found on PATH)", p.pdsh),
                "install pdsh (apt-get install pdsh) on this machine; on a Slurm cluster use "
                "--slurm-job instead");
    return kExitNothing;
  }
  auto agent = resolve_agent_path(o.common.agent_path);
  if (!agent) {
    print_error(agent.error());
    return agent.error().code == Errc::usage ? kExitUsage : kExitNothing;
  }
  p.hosts = std::move(*hosts);
  p.match = o.match;
  p.fanout = o.fanout;
  p.remote_setup = o.remote_setup;
  p.rcmd = o.rcmd;
  p.agent_path = *agent;
  p.timeout = std::chrono::milliseconds(static_cast<long long>(o.common.timeout_s * 1000));
  // The core round runs pdsh again, only to the hosts holding a chosen process; the agents
  // get the same --match, which is how they check that a pid is still one of the job's.
  return run_cluster_mode(*make_pdsh_launcher(std::move(p)), o.common, o.gcore);
}

}  // namespace

void add_pdsh_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<PdshCliOptions>();
  auto* sub =
      app.add_subcommand("pdsh", "Capture matching processes on many hosts through pdsh, merged");
  sub->add_option("-w", opts->hostlist, "Hosts: n[1-3],gpu7 (Slurm/pdsh host list syntax)");
  sub->add_option("--hostfile", opts->hostfile,
                  "File with one host per line (DeepSpeed 'host slots=N' too)");
  sub->add_option("--match", opts->match,
                  "Processes whose command line matches REGEX, on every host")
      ->required();
  sub->add_option("-f", opts->fanout, "Hosts pdsh contacts at once")
      ->check(whole_number("a host count", 1, 4096))
      ->capture_default_str();
  sub->add_option("--remote-setup", opts->remote_setup,
                  "File sourced on each host before the agent (like ~/.pdshrc)");
  sub->add_option("-R", opts->rcmd, "pdsh rcmd module (default: $PDSH_RCMD_TYPE, else pdsh's)")
      ->check(CLI::IsMember({"ssh", "rsh", "exec", "mrsh", "krb4", "qsh", "mqsh", "xcpu"}));
  add_fanout_options(sub, opts->common);
  add_output_options(sub, opts->common.output);
  add_gcore_dump_options(sub, opts->gcore);
  sub->callback([opts, &action] {
    opts->common.output.color = output_wants_color();
    action = [opts] { return run_pdsh(*opts); };
  });
}

}  // namespace hangscan::cli
