#include "fanout/slurm.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "fanout/hostlist.h"
#include "fanout/sacct.h"
#include "util/hints.h"
#include "util/parse_number.h"
#include "util/pattern.h"

namespace hangscan {

namespace {

using namespace std::chrono_literals;

Result<CommandResult> run_slurm_command(std::vector<std::string> argv, const Deadline& deadline) {
  CommandSpec spec;
  spec.argv = std::move(argv);
  spec.max_stdout = std::size_t{16} << 20;
  clean_slurm_environment(spec);
  return run_command(spec, deadline);
}

Error command_failed(const std::vector<std::string>& argv, const CommandResult& r) {
  std::string why = r.timed_out ? "timed out" : last_output_line(r.err);
  if (why.empty()) why = fmt::format("exit code {}", r.exit_code);
  return Error(Errc::io, fmt::format("{} failed: {}", describe_argv(argv), why));
}

}  // namespace

SlurmContext slurm_context_from_environment() {
  SlurmContext c;
  if (const char* j = std::getenv("SLURM_JOB_ID")) c.job_id = j;
  else if (const char* j2 = std::getenv("SLURM_JOBID")) c.job_id = j2;
  if (const char* s = std::getenv("SLURM_STEP_ID")) c.step_id = s;
  else if (const char* s2 = std::getenv("SLURM_STEPID")) c.step_id = s2;
  return c;
}

void clean_slurm_environment(CommandSpec& spec) {
  spec.unset_prefixes.push_back("SLURM_");
  spec.unset_prefixes.push_back("SLURMD_");
  spec.keep.push_back("SLURM_CONF");
}

Result<SlurmJob> parse_squeue_line(std::string_view output, std::string_view job_id) {
  for (auto line : output_lines(output)) {
    line = trim_space(line);
    if (line.empty()) continue;
    std::size_t a = line.find('|');
    std::size_t b = a == std::string_view::npos ? a : line.find('|', a + 1);
    if (b == std::string_view::npos) {
      return Error(Errc::bad_data,
                   fmt::format("unexpected squeue output '{}'", line.substr(0, 200)));
    }
    SlurmJob job;
    job.id = std::string(line.substr(0, a));
    job.state = std::string(line.substr(a + 1, b - a - 1));
    job.nodelist = std::string(trim_space(line.substr(b + 1)));
    if (job.id != job_id) continue;  // array or het siblings printed alongside
    return job;
  }
  return Error(Errc::not_found, fmt::format("Slurm job {} not found", job_id), 0,
               hints::unknown_slurm_job());
}

std::optional<int> parse_num_tasks(std::string_view text) {
  std::size_t pos = 0;
  while ((pos = text.find("NumTasks=", pos)) != std::string_view::npos) {
    bool word_start =
        pos == 0 || text[pos - 1] == ' ' || text[pos - 1] == '\n' || text[pos - 1] == '\t';
    pos += 9;
    if (!word_start) continue;
    std::string_view rest = text.substr(pos);
    auto n = take_int<int>(rest);
    if (n && *n > 0 && (rest.empty() || rest.front() == ' ' || rest.front() == '\n')) return n;
    return std::nullopt;
  }
  return std::nullopt;
}

Result<std::vector<std::string>> parse_hostnames(std::string_view output) {
  std::vector<std::string> nodes;
  for (auto line : output_lines(output)) {
    line = trim_space(line);
    if (line.empty()) continue;
    if (auto st = validate_host_name(line); !st)
      return st.error().with_context("scontrol show hostnames");
    if (std::find(nodes.begin(), nodes.end(), line) == nodes.end()) nodes.emplace_back(line);
    if (nodes.size() > kMaxHosts)
      return Error(Errc::bad_data, "scontrol show hostnames: too many nodes");
  }
  if (nodes.empty()) return Error(Errc::bad_data, "scontrol show hostnames printed no node");
  return nodes;
}

std::vector<SrunNodeError> parse_srun_errors(std::string_view text) {
  static const Pattern launch(
      R"(^srun: error: Task launch for \S+ failed on node ([^:\s]+): (.*)$)");
  static const Pattern task(R"(^srun: error: ([^:\s]+): tasks? [0-9,\-]+: (.*)$)");
  std::vector<SrunNodeError> out;
  for (auto line : output_lines(text)) {
    std::string s(line.substr(0, 1000));
    if (auto m = launch.match_groups(s); m && validate_host_name((*m)[1])) {
      out.push_back(
          {(*m)[1], fmt::format("srun could not start the agent there: {}", (*m)[2]), true});
    } else if (auto t = task.match_groups(s); t && validate_host_name((*t)[1])) {
      std::string what = (*t)[2];
      if (!what.empty())
        what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
      out.push_back({(*t)[1], fmt::format("agent {}", what), false});
    }
  }
  return out;
}

std::vector<std::string> srun_general_errors(std::string_view text) {
  std::vector<std::string> out;
  for (auto line : output_lines(text)) {
    bool error = line.rfind("srun: error: ", 0) == 0 || line.rfind("srun: fatal: ", 0) == 0;
    if (!error) continue;
    if (line.find("Task launch for ") != std::string_view::npos) continue;
    static const Pattern task(R"(^srun: error: [^:\s]+: tasks? [0-9,\-]+: .*$)");
    if (task.matches(line.substr(0, 1000))) continue;
    out.emplace_back(line.substr(0, 300));
  }
  std::reverse(out.begin(), out.end());
  return out;
}

Result<SlurmJob> resolve_slurm_job(const SlurmOptions& o, const Deadline& deadline) {
  if (auto st = validate_job_id(o.job_id); !st) return st.error();
  std::vector<std::string> squeue{o.squeue, "-h", "-j", o.job_id, "-o", "%i|%T|%N"};
  auto q = run_slurm_command(squeue, deadline);
  if (!q) return q.error();
  if (!q->succeeded()) {
    if (q->err.find("Invalid job id") != std::string::npos) {
      return Error(Errc::not_found, fmt::format("Slurm job {} not found", o.job_id), 0,
                   hints::unknown_slurm_job());
    }
    return command_failed(squeue, *q);
  }
  auto job = parse_squeue_line(q->out, o.job_id);
  if (!job) return job.error();
  if (job->state == "PENDING" || job->nodelist.empty() || job->nodelist == "(null)") {
    return Error(Errc::unsupported,
                 fmt::format("Slurm job {} is {}: no rank runs yet", o.job_id, job->state), 0,
                 "wait until squeue shows it RUNNING");
  }
  std::vector<std::string> hostnames{o.scontrol, "show", "hostnames", job->nodelist};
  auto h = run_slurm_command(hostnames, deadline);
  if (!h) return h.error();
  if (!h->succeeded()) return command_failed(hostnames, *h);
  auto nodes = parse_hostnames(h->out);
  if (!nodes) return nodes.error();
  job->nodes = std::move(*nodes);
  std::vector<std::string> show{o.scontrol, "show", "job", o.job_id};
  auto s = run_slurm_command(show, deadline);
  if (s && s->succeeded()) {
    job->num_tasks = parse_num_tasks(s->out);
    job->start = parse_start_time(s->out);
  }
  return job;
}

std::vector<std::string> build_srun_argv(const SlurmOptions& o,
                                         const std::vector<std::string>& nodes,
                                         std::chrono::milliseconds agent_timeout) {
  const std::string n = std::to_string(nodes.size());
  std::vector<std::string> argv{
      o.srun,
      "--jobid=" + o.job_id,
      "--overlap",     // the ranks hold the allocation's CPUs
      "--gres=gpu:0",  // and its GPUs: the agent needs none
      "--mpi=none",    // no PMI set-up for the agent step
      "-N",
      n,
      "-n",
      n,
      "--ntasks-per-node=1",
      "-w",
      compress_hostlist(nodes),
      "--label",  // lines are keyed by task; see agent_framing.h
      "--quiet",
      "--input=none",
      o.agent_path,
      o.agent_subcommand,
      "--slurm-job",
      o.job_id,
      "--timeout-ms",
      std::to_string(agent_timeout.count()),
  };
  if (o.job_start) {
    argv.push_back("--job-start");
    argv.push_back(fmt::format("{:.0f}", *o.job_start));
  }
  if (!o.context.step_id.empty() && o.context.job_id == o.job_id) {
    argv.push_back("--exclude-step");
    argv.push_back(o.context.step_id);
  }
  argv.insert(argv.end(), o.agent_args.begin(), o.agent_args.end());
  return argv;
}

AgentAnswers run_slurm_agents(const SlurmOptions& o, const std::vector<std::string>& nodes) {
  auto started = std::chrono::steady_clock::now();
  Deadline deadline = Deadline::after(o.timeout);
  VerdictBook book(nodes);
  std::map<std::string, std::string> soft_reasons;  // srun's word on nodes still pending
  std::vector<std::string> log;
  bool timed_out = false;
  const std::size_t total = nodes.size();

  for (int round = 0; round < std::max(1, o.max_rounds); ++round) {
    std::vector<std::string> pending = book.pending();
    if (pending.empty() || deadline.expired()) break;
    CommandSpec spec;
    spec.argv = build_srun_argv(o, pending, agent_timeout_for(deadline.remaining()));
    clean_slurm_environment(spec);
    spec.max_stderr = std::size_t{4} << 20;
    FrameCollector frames;
    frames.on_document(o.watch.document);
    const std::size_t settled_before = book.settled();
    const std::size_t answered_before = book.answered();
    const std::size_t failed_before = settled_before - answered_before;
    std::size_t reported = 0;
    auto on_line = [&](std::string_view line) {
      frames.add_srun_line(line);
      if (o.watch.progress && frames.finished() != reported) {
        reported = frames.finished();
        o.watch.progress(NodeProgress{answered_before + frames.finished() - frames.failed(),
                                      failed_before + frames.failed(), total});
      }
    };
    auto r = run_command(spec, deadline, on_line);
    if (!r) {
      for (const auto& node : pending) book.note_failure(node, r.error().what());
      log.push_back(fmt::format("{}: {}", describe_argv(spec.argv), r.error().what()));
      break;
    }
    log.push_back(
        fmt::format("round {}: {} -> {}{} in {} ms", round + 1, describe_argv(spec.argv),
                    r->timed_out ? "timed out" : fmt::format("exit {}", r->exit_code),
                    r->term_signal != 0 ? fmt::format(" (signal {})", r->term_signal) : "",
                    r->elapsed.count()));
    // Labeled stderr lines are the agents' own messages: evidence for their task's reason.
    for (auto line : output_lines(r->err)) frames.add_srun_line(line);
    book.record(decode_outputs(frames.outputs(), NodeKey::begin_line));
    for (const auto& e : parse_srun_errors(r->err)) {
      if (e.launch_failed) {
        book.note_failure(e.node, e.reason);
      } else {
        soft_reasons[e.node] = e.reason;
      }
    }
    if (o.watch.progress)
      o.watch.progress(NodeProgress{book.answered(), book.settled() - book.answered(), total});
    if (r->timed_out) {
      timed_out = true;
      break;
    }
    if (book.settled() == settled_before) {
      // Nothing learned: asking again would fail the same way.
      auto general = srun_general_errors(r->err);
      std::string why = !general.empty() ? general.front() : last_output_line(r->err);
      if (!why.empty()) {
        for (const auto& node : book.pending()) {
          if (soft_reasons.count(node) == 0) soft_reasons[node] = why;
        }
      }
      break;
    }
  }
  for (const auto& node : book.pending()) {
    auto it = soft_reasons.find(node);
    if (it != soft_reasons.end()) book.note_failure(node, it->second);
  }
  return std::move(book).finish(timed_out || deadline.expired(), o.timeout, std::move(log),
                                started);
}

namespace {

class SlurmLauncher : public Launcher {
 public:
  explicit SlurmLauncher(SlurmOptions options) : options_(std::move(options)) {}

  Result<LaunchPlan> plan() override {
    auto job = resolve_slurm_job(options_, Deadline::after(options_.timeout));
    if (!job) return job.error();
    options_.job_start = job->start;
    LaunchPlan plan;
    plan.job_id = job->id;
    plan.world_size = job->num_tasks;
    plan.nodes = job->nodes;
    plan.description = fmt::format("job {} {} on {} node(s) {}, {} task(s)", job->id, job->state,
                                   job->nodes.size(), job->nodelist,
                                   job->num_tasks ? std::to_string(*job->num_tasks) : "unknown");
    return plan;
  }

  AgentAnswers run_agents(const std::vector<std::string>& nodes,
                          const std::vector<std::string>& agent_args,
                          const AnswerWatch& watch) const override {
    SlurmOptions round = options_;
    round.agent_args = agent_args;
    round.watch = watch;
    return run_slurm_agents(round, nodes);
  }

  // sacct's records of the job's steps, joined to the deaths; nothing without accounting.
  void annotate(JobSnapshot& job) const override {
    auto r = run_slurm_command(sacct_argv(options_.sacct, options_.job_id),
                               Deadline::after(std::chrono::milliseconds(10000)));
    if (!r || !r->succeeded()) return;
    join_slurm_records(job, parse_sacct(r->out));
  }

 private:
  SlurmOptions options_;
};

}  // namespace

std::unique_ptr<Launcher> make_slurm_launcher(SlurmOptions options) {
  return std::make_unique<SlurmLauncher>(std::move(options));
}

}  // namespace hangscan
