#include "fanout/cluster_cores.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "corewrite/core_pick.h"
#include "fanout/core_round.h"

namespace hangscan {

std::string absolute_core_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(dir, ec);
  if (ec) return dir;
  p = p.lexically_normal();
  if (!p.has_filename() && p != p.root_path()) p = p.parent_path();  // "/x/" -> "/x"
  return p.string();
}

Result<JobCores> run_cluster_cores(const FanoutResult& result, const JobSnapshot& merged,
                                   const Analysis& analysis, const JobCoresRequest& request,
                                   const CoreRoundFn& run_round) {
  auto picked = pick_cores(analysis, request.mode, merged.processes.size());
  if (!picked) return picked.error();
  JobCores out;
  out.dir = absolute_core_dir(request.dir);
  out.roles = picked->roles;
  if (picked->members.empty()) return out;
  std::vector<CoreRequest> requests;
  std::vector<std::string> hosts;  // per request, the node as the fan-out asked it
  std::vector<std::string> nodes;  // the nodes of the core round, in the order asked
  for (std::size_t i : picked->members) {
    const ProcessSnapshot& p = merged.processes[i];
    auto named = result.agent_nodes.find(p.host);
    requests.push_back(CoreRequest{named != result.agent_nodes.end() ? named->second : p.host,
                                   p.pid, p.rank, p.start_ticks});
    hosts.push_back(p.host);
  }
  for (const auto& n : result.requested) {
    if (std::find(hosts.begin(), hosts.end(), n) != hosts.end()) nodes.push_back(n);
  }
  AgentAnswers answers =
      run_round(nodes, core_round_agent_args(requests, out.dir, std::to_string(request.max_size)));
  out.outcomes = pair_core_outcomes(requests, hosts, answers);
  out.diagnostics = std::move(answers.diagnostics);
  out.log = std::move(answers.log);
  out.nodes = nodes.size();
  out.elapsed = answers.elapsed;
  return out;
}

}  // namespace hangscan
