// `hangscan pdsh -w HOSTLIST`: the agent on many hosts through pdsh, where there is no Slurm.
//
// Why: clusters without Slurm (or jobs started by hand over ssh) still need "every rank, on
// every host, in one command". pdsh already knows how to reach the hosts (ssh, rsh, exec, the
// user's PDSH_RCMD_TYPE and PDSH_SSH_ARGS_APPEND); hangscan only builds the command and reads
// the `host: line` output back. With a remote shell (ssh, rsh) pdsh hands the remote side one
// command line, so this is the one place hangscan builds a shell line: every word in it is
// single-quoted (shell_quote), host names and the regex included. With `-R exec` pdsh runs an
// argv locally and substitutes %h, so no shell is involved unless --remote-setup asks for one.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "fanout/collector.h"
#include "fanout/launcher.h"

namespace hangscan {

struct PdshOptions {
  std::vector<std::string> hosts;       // validated (parse_hostlist / parse_hostfile)
  std::string match;                    // --match REGEX for the agent
  int fanout = 32;                      // pdsh -f
  std::string remote_setup;             // --remote-setup FILE, sourced on each host first
  std::string rcmd;                     // -R TYPE; "" = $PDSH_RCMD_TYPE or pdsh's default
  std::string agent_path;               // hangscan on the hosts
  std::vector<std::string> agent_args;  // capture options forwarded to the agent
  std::chrono::milliseconds timeout{30000};
  std::string pdsh = "pdsh";
  AnswerWatch watch;  // progress and documents as they arrive
};

// The rcmd type pdsh will use: options.rcmd, else $PDSH_RCMD_TYPE, else "" (pdsh's default).
std::string effective_rcmd(const PdshOptions& options);

// The agent's argv on a host (before any quoting); `%h` is pdsh's host substitution (exec).
std::vector<std::string> pdsh_agent_argv(const PdshOptions& options,
                                         std::chrono::milliseconds agent_timeout, bool exec_rcmd);

// The single remote shell line for ssh/rsh: every word quoted; with --remote-setup,
// `. 'FILE' && exec 'agent' ...`.
std::string pdsh_remote_line(const PdshOptions& options,
                             const std::vector<std::string>& agent_argv);

// The full pdsh argv.
std::vector<std::string> build_pdsh_argv(const PdshOptions& options,
                                         std::chrono::milliseconds agent_timeout);

// pdsh's own complaints about hosts ("pdsh@login: n3: ssh exited with exit code 255").
struct PdshHostError {
  std::string host;
  std::string reason;
};
std::vector<PdshHostError> parse_pdsh_errors(std::string_view stderr_text);

// Runs pdsh once over every host (the agent with options.agent_args) and collects the
// documents; hosts without a usable answer are unreachable.
AgentAnswers run_pdsh_agents(const PdshOptions& options);

// The Launcher of `pdsh`: plan() is options.hosts, run_agents() is run_pdsh_agents() on the
// round's hosts with its arguments.
std::unique_ptr<Launcher> make_pdsh_launcher(PdshOptions options);

}  // namespace hangscan
