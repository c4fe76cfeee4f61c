#include "fanout/sacct.h"

#include <ctime>

#include "fanout/agent_framing.h"
#include "fanout/hostlist.h"

namespace hangscan {

namespace {

std::vector<std::string_view> split_bars(std::string_view line) {
  std::vector<std::string_view> out;
  while (true) {
    auto bar = line.find('|');
    out.push_back(line.substr(0, bar));
    if (bar == std::string_view::npos) return out;
    line.remove_prefix(bar + 1);
  }
}

// The job's own line ("42") and its batch, extern and interactive steps run no rank.
bool rank_step(const SlurmStepRecord& r) {
  auto dot = r.step.find('.');
  if (dot == std::string::npos) return false;
  std::string_view name = std::string_view(r.step).substr(dot + 1);
  return name != "batch" && name != "extern" && name != "interactive";
}

bool on_node(const SlurmStepRecord& r, const std::string& node) {
  for (const std::string& n : r.nodes) {
    if (n == node) return true;
  }
  return false;
}

// The one rank step of `node` that says the most: the failed one when exactly one failed,
// else the only rank step there; nullptr when that is not one step.
const SlurmStepRecord* step_of_node(const std::vector<SlurmStepRecord>& records,
                                    const std::string& node) {
  const SlurmStepRecord* failed = nullptr;
  const SlurmStepRecord* any = nullptr;
  int failed_n = 0, any_n = 0;
  for (const SlurmStepRecord& r : records) {
    if (!rank_step(r) || !on_node(r, node)) continue;
    ++any_n;
    any = &r;
    if (step_failed(r)) {
      ++failed_n;
      failed = &r;
    }
  }
  if (failed_n == 1) return failed;
  if (failed_n == 0 && any_n == 1) return any;
  return nullptr;
}

void attach(Death& d, const SlurmStepRecord& r) {
  d.slurm_step = r.step;
  d.slurm_state = r.state;
  d.slurm_exit_code = r.exit_code;
  d.evidence.push_back("sacct");
}

}  // namespace

std::vector<std::string> sacct_argv(const std::string& sacct, const std::string& job_id) {
  return {sacct, "-j", job_id, "-P", "-n", "-o", "JobID,State,ExitCode,NodeList"};
}

std::vector<SlurmStepRecord> parse_sacct(std::string_view text) {
  std::vector<SlurmStepRecord> out;
  for (std::string_view line : output_lines(text)) {
    auto f = split_bars(line);
    if (f.size() != 4 || f[0].empty() || f[1].empty()) continue;
    SlurmStepRecord r{
        std::string(f[0]), std::string(f[1]), std::string(f[2]), std::string(f[3]), {}};
    if (auto nodes = parse_hostlist(r.nodelist); nodes && r.nodelist != "None assigned")
      r.nodes = std::move(*nodes);
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<double> parse_start_time(std::string_view text) {
  constexpr std::string_view kKey = "StartTime=";
  auto at = text.find(kKey);
  if (at == std::string_view::npos) return std::nullopt;
  std::string value(text.substr(at + kKey.size(), 19));
  std::tm tm{};
  const char* end = strptime(value.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  tm.tm_isdst = -1;
  std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return static_cast<double>(t);
}

bool step_failed(const SlurmStepRecord& r) {
  std::string_view s = r.state;
  if (s == "RUNNING" || s == "PENDING" || s == "COMPLETING" || s == "REQUEUED" || s == "RESIZING" ||
      s == "SUSPENDED")
    return false;
  return !(s == "COMPLETED" && (r.exit_code == "0:0" || r.exit_code.empty()));
}

void join_slurm_records(JobSnapshot& job, const std::vector<SlurmStepRecord>& records) {
  std::vector<const SlurmStepRecord*> used;
  auto join = [&](Death& d, const std::string& host) {
    if (host.empty()) return;
    if (const SlurmStepRecord* r = step_of_node(records, host)) {
      attach(d, *r);
      used.push_back(r);
    }
  };
  for (ProcessSnapshot& p : job.processes) {
    if (p.death) join(*p.death, p.death->host.empty() ? p.host : p.death->host);
  }
  for (Death& d : job.deaths) join(d, d.host);
  for (const SlurmStepRecord& r : records) {
    if (!rank_step(r) || !step_failed(r) || r.nodes.empty()) continue;
    bool joined = false;
    for (const SlurmStepRecord* u : used) joined |= u == &r;
    if (joined) continue;
    Death d;
    d.how = "slurm";
    d.host = r.nodes.size() == 1 ? r.nodes.front() : r.nodelist;
    attach(d, r);
    job.deaths.push_back(std::move(d));
  }
}

}  // namespace hangscan
