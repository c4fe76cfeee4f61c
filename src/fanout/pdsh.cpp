#include "fanout/pdsh.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>

#include "fanout/hostlist.h"
#include "fanout/runner.h"
#include "util/pattern.h"

namespace hangscan {

std::string effective_rcmd(const PdshOptions& o) {
  if (!o.rcmd.empty()) return o.rcmd;
  if (const char* t = std::getenv("PDSH_RCMD_TYPE"); t != nullptr) return t;
  return {};
}

std::vector<std::string> pdsh_agent_argv(const PdshOptions& o,
                                         std::chrono::milliseconds agent_timeout, bool exec_rcmd) {
  std::vector<std::string> argv{o.agent_path,   "agent",
                                "--match",      o.match,
                                "--timeout-ms", std::to_string(agent_timeout.count())};
  // With exec every "host" may be this machine: the host name pdsh substitutes is the only
  // thing that tells the agents apart. Over ssh the agent names itself.
  if (exec_rcmd) {
    argv.push_back("--node");
    argv.push_back("%h");
  }
  argv.insert(argv.end(), o.agent_args.begin(), o.agent_args.end());
  return argv;
}

std::string pdsh_remote_line(const PdshOptions& o, const std::vector<std::string>& agent_argv) {
  std::string line;
  if (!o.remote_setup.empty()) line = ". " + shell_quote(o.remote_setup) + " && exec";
  for (const auto& word : agent_argv) {
    if (!line.empty()) line += ' ';
    line += shell_quote(word);
  }
  return line;
}

std::vector<std::string> build_pdsh_argv(const PdshOptions& o,
                                         std::chrono::milliseconds agent_timeout) {
  const std::string rcmd = effective_rcmd(o);
  const bool exec_rcmd = rcmd == "exec";
  auto secs =
      std::max<long long>(1, std::chrono::duration_cast<std::chrono::seconds>(o.timeout).count());
  std::vector<std::string> argv{o.pdsh};
  if (!o.rcmd.empty()) {
    argv.push_back("-R");
    argv.push_back(o.rcmd);
  }
  argv.insert(argv.end(), {"-f", std::to_string(std::max(1, o.fanout)), "-t",
                           std::to_string(std::min(10LL, secs)), "-u", std::to_string(secs), "-w",
                           compress_hostlist(o.hosts)});
  auto agent = pdsh_agent_argv(o, agent_timeout, exec_rcmd);
  if (exec_rcmd && o.remote_setup.empty()) {
    argv.insert(argv.end(), agent.begin(), agent.end());
  } else if (exec_rcmd) {
    argv.insert(argv.end(), {"/bin/sh", "-c", pdsh_remote_line(o, agent)});
  } else {
    argv.push_back(pdsh_remote_line(o, agent));
  }
  return argv;
}

std::vector<PdshHostError> parse_pdsh_errors(std::string_view text) {
  static const Pattern host_error(R"(^pdsh@[^:\s]*: ([^:\s]+): (.*)$)");
  std::vector<PdshHostError> out;
  for (auto line : output_lines(text)) {
    std::string s(line.substr(0, 1000));
    auto m = host_error.match_groups(s);
    if (m && validate_host_name((*m)[1])) {
      out.push_back({(*m)[1], fmt::format("pdsh: {}", (*m)[2])});
    }
  }
  return out;
}

AgentAnswers run_pdsh_agents(const PdshOptions& o) {
  auto started = std::chrono::steady_clock::now();
  Deadline deadline = Deadline::after(o.timeout);
  VerdictBook book(o.hosts);
  const std::size_t total = o.hosts.size();
  CommandSpec spec;
  spec.argv = build_pdsh_argv(o, agent_timeout_for(o.timeout));
  spec.max_stderr = std::size_t{4} << 20;
  FrameCollector frames;
  frames.on_document(o.watch.document);
  std::size_t reported = 0;
  auto on_line = [&](std::string_view line) {
    frames.add_pdsh_line(line);
    if (o.watch.progress && frames.finished() != reported) {
      reported = frames.finished();
      o.watch.progress(NodeProgress{frames.finished() - frames.failed(), frames.failed(), total});
    }
  };
  std::vector<std::string> log;
  auto r = run_command(spec, deadline, on_line);
  bool timed_out = false;
  if (!r) {
    for (const auto& h : o.hosts) book.note_failure(h, r.error().what());
    log.push_back(fmt::format("{}: {}", describe_argv(spec.argv), r.error().what()));
  } else {
    timed_out = r->timed_out;
    log.push_back(fmt::format("{} -> {} in {} ms", describe_argv(spec.argv),
                              r->timed_out ? "timed out" : fmt::format("exit {}", r->exit_code),
                              r->elapsed.count()));
    // Remote stderr arrives as "host: line" too: the host's own words for its reason.
    std::vector<PdshHostError> errors = parse_pdsh_errors(r->err);
    for (auto line : output_lines(r->err)) {
      if (line.rfind("pdsh@", 0) != 0) frames.add_pdsh_line(line);
    }
    book.record(decode_outputs(frames.outputs(), NodeKey::stream));
    std::string general;
    for (auto line : output_lines(r->err)) {
      if (line.rfind("pdsh@", 0) == 0 &&
          std::none_of(errors.begin(), errors.end(), [&](const PdshHostError& e) {
            return line.find(": " + e.host + ": ") != std::string_view::npos;
          })) {
        general = std::string(line.substr(0, 300));
      }
    }
    auto pending = book.pending();
    for (const auto& e : errors) {
      if (std::find(pending.begin(), pending.end(), e.host) != pending.end())
        book.note_failure(e.host, e.reason);
    }
    if (!r->succeeded() && !general.empty()) {
      for (const auto& h : book.pending()) book.note_failure(h, general);
    }
  }
  if (o.watch.progress)
    o.watch.progress(NodeProgress{book.answered(), book.settled() - book.answered(), total});
  return std::move(book).finish(timed_out, o.timeout, std::move(log), started);
}

namespace {

class PdshLauncher : public Launcher {
 public:
  explicit PdshLauncher(PdshOptions options) : options_(std::move(options)) {}

  Result<LaunchPlan> plan() override {
    LaunchPlan plan;
    plan.nodes = options_.hosts;
    return plan;
  }

  AgentAnswers run_agents(const std::vector<std::string>& nodes,
                          const std::vector<std::string>& agent_args,
                          const AnswerWatch& watch) const override {
    PdshOptions round = options_;
    round.hosts = nodes;
    round.agent_args = agent_args;
    round.watch = watch;
    return run_pdsh_agents(round);
  }

 private:
  PdshOptions options_;
};

}  // namespace

std::unique_ptr<Launcher> make_pdsh_launcher(PdshOptions options) {
  return std::make_unique<PdshLauncher>(std::move(options));
}

}  // namespace hangscan
