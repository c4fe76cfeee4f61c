#include "fanout_cli.h"

#include <unistd.h>

#include <fmt/core.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli.h"
#include "fanout/cluster_capture.h"
#include "gcore_cmd.h"
#include "group/analysis.h"
#include "proc/proc_files.h"
#include "proc/process_tree.h"
#include "util/escape.h"
#include "util/safe_output.h"

namespace hangscan::cli {

namespace {

// -v's plan, and the progress line and early notes when stderr is a terminal (off a terminal
// nothing is shown, and nothing computed for it).
ClusterHooks terminal_hooks(const FanoutCliOptions& o) {
  ClusterHooks hooks;
  hooks.planned = [verbose = o.verbose](const LaunchPlan& plan) {
    if (verbose && !plan.description.empty())
      fmt::print(stderr, "hangscan: {}\n", plan.description);
  };
  std::shared_ptr<TerminalProgress> tty = tty_progress();
  if (tty->on_terminal()) {
    hooks.progress = [tty](const NodeProgress& p) { tty->progress(p); };
    hooks.note = [tty](const EarlyNote& n) { tty->note(early_note_words(n)); };
  }
  return hooks;
}

}  // namespace

void add_fanout_options(CLI::App* app, FanoutCliOptions& o) {
  app->add_option("--timeout", o.timeout_s, "Seconds for every node to answer (all in parallel)")
      ->check(finite_number("a number of seconds", 1.0, 86400.0))
      ->capture_default_str();
  app->add_option("--agent-path", o.agent_path,
                  "hangscan binary on the nodes (default: this binary's path)");
  app->add_option("--output", o.output_dir,
                  "Also write one text file per node and the merged report (text, HTML) to DIR");
  app->add_flag("-v,--verbose", o.verbose, "Print the commands run and their timing");
  add_capture_flags(app, o.capture);
}

bool cluster_options_valid(const FanoutCliOptions& o, const GcoreDumpOptions& gcore,
                           const std::string* match) {
  if (auto g = group_options(o.output); !g) {
    print_error(g.error());
    return false;
  }
  if (auto st = check_gcore_options(gcore); !st) {
    print_error(st.error());
    return false;
  }
  if (match != nullptr) {
    if (auto re = compile_match_pattern(*match); !re) {
      print_error(re.error());
      return false;
    }
  }
  return true;
}

Result<std::string> resolve_agent_path(const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    if (explicit_path.front() != '/') {
      return Error(Errc::usage,
                   fmt::format("--agent-path '{}' must be an absolute path", explicit_path), 0,
                   "the agent runs on other nodes, in another working directory");
    }
    return explicit_path;
  }
  auto self = read_link("/proc/self/exe");
  if (!self)
    return Error(Errc::not_found, "cannot resolve /proc/self/exe", errno, "pass --agent-path");
  // Started by the tarball's launcher (make dist, tools/dist.sh) through its bundled loader,
  // /proc/self/exe is that loader: the agent on the nodes is the launcher, which says its path.
  const char* launcher = std::getenv("HANGSCAN_DIST_EXE");
  if (self->ends_with("/ld-linux-x86-64.so.2") && launcher != nullptr && launcher[0] == '/')
    return std::string(launcher);
  return std::move(*self);
}

std::shared_ptr<TerminalProgress> tty_progress() {
  return std::make_shared<TerminalProgress>(::isatty(STDERR_FILENO) == 1, [](std::string_view s) {
    std::fwrite(s.data(), 1, s.size(), stderr);
    std::fflush(stderr);
  });
}

int finish_fanout(const FanoutResult& result, const JobSnapshot& merged, const Analysis& analysis,
                  const FanoutCliOptions& o) {
  if (o.verbose) {
    // Node log lines carry names from the nodes' targets: shown escaped (util/escape.h).
    for (const auto& line : result.log) fmt::print(stderr, "hangscan: {}\n", escape_for_text(line));
    fmt::print(stderr, "hangscan: {} of {} nodes answered in {} ms\n", result.nodes.size(),
               result.requested.size(), result.elapsed.count());
  }
  for (const auto& u : result.unreachable) {
    print_error(fmt::format("node {} unreachable: {}", u.host, u.reason));
  }
  if (!result.unreachable.empty()) {
    fmt::print(stderr,
               "hint: {} of {} nodes reported; check the others with {}, or raise --timeout\n",
               result.nodes.size(), result.requested.size(), o.check_node);
  }
  bool wrote = write_report(merged, analysis, o.output);
  if (result.nodes.empty()) return kExitNothing;
  if (!wrote) return kExitNothing;
  return exit_code_for(merged);
}

int run_cluster_mode(Launcher& launcher, const FanoutCliOptions& o, const GcoreDumpOptions& gcore) {
  ClusterRequest request;
  request.capture = o.capture;
  if (gcore.requested()) {
    auto cores = gcore_request(gcore);
    if (!cores) {
      print_error(cores.error());
      return kExitUsage;
    }
    request.cores = std::move(*cores);
  }
  auto group = group_options(o.output);
  if (!group) {
    print_error(group.error());
    return kExitUsage;
  }
  request.group = *group;
  request.logs = job_logs(o.output);
  // --output DIR: opened and checked by the library before any node is asked.
  if (!o.output_dir.empty()) {
    RunOutputRequest files{o.output_dir, render_options(o.output), chosen_writer(o.output),
                           render_options(o.output)};
    files.text.color = false;
    request.output = std::move(files);
  }
  request.pod_logs = o.pod_logs;
  ClusterHooks hooks = terminal_hooks(o);
  int rc = kExitNothing;
  hooks.report = [&](const ClusterOutcome& c) {
    // The kubectl calls name pods and files of the job: shown escaped (util/escape.h).
    for (const auto& command : o.verbose ? c.log_commands : std::vector<std::string>{})
      fmt::print(stderr, "hangscan: logs: {}\n", escape_for_text(command));
    print_log_problems(c.log_problems);
    rc = finish_fanout(c.run.result, c.run.merged, c.analysis, o);
    return rc != kExitNothing;
  };
  auto outcome = run_cluster_capture(launcher, request, hooks);
  if (!outcome) {
    print_error(outcome.error());
    return outcome.error().code == Errc::usage ? kExitUsage : kExitNothing;
  }
  if (outcome->output && !outcome->output->failed.empty()) {
    print_errors(outcome->output->failed);
    rc = kExitNothing;
  }
  return outcome->cores ? report_cluster_cores(rc, *outcome->cores, o.verbose) : rc;
}

}  // namespace hangscan::cli
