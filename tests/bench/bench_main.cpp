// hs_bench: grouping and merge benchmarks on synthetic jobs (numbers go to docs/performance.md).
//
// Why a separate binary: the figures the issues promise (100,000 ranks grouped in < 1 s and
// < 1 GB; 10,000 node documents merged in < 2 s) must be measured the same way every time.
// Each benchmark runs in a forked child so its peak RSS (getrusage) is its own.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "group/analysis.h"
#include "report/agent_format.h"
#include "report/html_writer.h"
#include "report/json_reader.h"
#include "report/json_writer.h"
#include "synth_job.h"
#include "util/shared_stacks.h"

namespace hangscan::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU seconds of this process: on a shared, loaded machine wall time overstates the cost.
double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double peak_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

double current_rss_mb() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

struct Args {
  int group_ranks = 100000;
  int group_depth = 60;
  int nodes = 10000;
  int ranks_per_node = 8;
  int merge_depth = 60;
  int threads = 2;        // parser threads in the merge benchmark
  bool enforce = false;   // fail when over the promised limits
  std::string html_file;  // --html FILE: write the page of the HTML benchmark job there
  int html_ranks = 10000;
};

// Returns false when the analysis did not find exactly the synthetic odd ranks.
bool check(const Analysis& a, const SynthOptions& o) {
  return a.suspects.size() == synth_minority_count(o) &&
         a.groups.size() == static_cast<std::size_t>(o.classes) && a.missing_ranks.empty();
}

int run_group(const Args& args) {
  SynthOptions o;
  o.ranks = args.group_ranks;
  o.depth = args.group_depth;
  auto t0 = Clock::now();
  JobSnapshot job = make_synthetic_job(o);
  double gen_s = seconds_since(t0);
  double input_mb = current_rss_mb();
  t0 = Clock::now();
  double c0 = cpu_seconds();
  Analysis a = analyze(job, GroupOptions{});
  double group_s = seconds_since(t0);
  double group_cpu = cpu_seconds() - c0;
  double peak = peak_rss_mb();
  bool ok = check(a, o);
  std::printf(
      "| group | %d ranks, %d classes, %d-frame stacks | %.3f s wall, %.3f s CPU | %.0f MB (input "
      "snapshot "
      "%.0f MB, grouping adds %.0f MB) | %s (generate %.2f s) |\n",
      o.ranks, o.classes, o.depth, group_s, group_cpu, peak, input_mb, peak - input_mb,
      ok ? "ok" : "WRONG ANSWER", gen_s);
  if (!ok) return 1;
  if (args.enforce && (group_cpu >= 1.0 || peak - input_mb >= 1024.0)) return 2;
  return 0;
}

int run_merge(const Args& args) {
  SynthOptions o;
  o.ranks = args.nodes * args.ranks_per_node;
  o.depth = args.merge_depth;
  o.ranks_per_host = args.ranks_per_node;
  o.helper_thread = true;
  auto t0 = Clock::now();
  std::vector<std::string> docs;
  docs.reserve(static_cast<std::size_t>(args.nodes));
  std::size_t bytes = 0;
  for (int n = 0; n < args.nodes; ++n) {
    docs.push_back(
        write_agent_json(make_synthetic_job(o, n * args.ranks_per_node, args.ranks_per_node)));
    bytes += docs.back().size();
  }
  double gen_s = seconds_since(t0);
  t0 = Clock::now();
  double c0 = cpu_seconds();
  // Documents are parsed by `threads` workers, as a collector parses each node's answer on
  // arrival; the merge itself then only moves processes.
  std::vector<JobSnapshot> parts(docs.size());
  SharedStacks shared;  // as EarlyReader's workers share one
  std::vector<std::thread> workers;
  std::atomic<bool> bad{false};
  for (int w = 0; w < args.threads; ++w) {
    workers.emplace_back([&, w] {
      for (std::size_t i = static_cast<std::size_t>(w); i < docs.size();
           i += static_cast<std::size_t>(args.threads)) {
        auto r = read_job_json(docs[i], ReadLimits{}, &shared);
        if (!r.ok()) {
          bad = true;
          return;
        }
        parts[i] = std::move(*r);
      }
    });
  }
  for (std::thread& t : workers) t.join();
  if (bad) {
    std::fprintf(stderr, "hs_bench: an agent document was rejected\n");
    return 1;
  }
  JobSnapshot job = merge_job_snapshots(std::move(parts));
  double merge_s = seconds_since(t0);
  double merge_cpu = cpu_seconds() - c0;
  docs.clear();
  docs.shrink_to_fit();
  t0 = Clock::now();
  c0 = cpu_seconds();
  Analysis a = analyze(job, GroupOptions{});
  double group_s = seconds_since(t0);
  double group_cpu = cpu_seconds() - c0;
  bool ok = check(a, o) && job.processes.size() == static_cast<std::size_t>(o.ranks);
  std::printf(
      "| merge | %d node documents x %d ranks, %d-frame stacks, %.1f MB of agent JSON (%.0f "
      "bytes/node), "
      "%d parser thread%s | "
      "parse+merge %.3f s wall, %.3f s CPU; grouping %.3f s wall, %.3f s CPU | %.0f MB | %s "
      "(generate+write %.2f s) |\n",
      args.nodes, args.ranks_per_node, o.depth, static_cast<double>(bytes) / 1e6,
      static_cast<double>(bytes) / args.nodes, args.threads, args.threads == 1 ? "" : "s", merge_s,
      merge_cpu, group_s, group_cpu, peak_rss_mb(), ok ? "ok" : "WRONG ANSWER", gen_s);
  if (!ok) return 1;
  if (args.enforce && merge_s >= 2.0) return 2;
  return 0;
}

// The HTML report of the page job (synth_job.h): its size and how long it takes to make; the
// browser's part is measured by tests/bench/bench_html.py, which opens the file.
int run_html(const Args& args) {
  PageJobOptions o;
  o.ranks = args.html_ranks;
  JobSnapshot job = make_page_job(o);
  auto t0 = Clock::now();
  double c0 = cpu_seconds();
  Analysis a = analyze(job, GroupOptions{});
  std::string page = render_html(job, a);
  double make_s = seconds_since(t0);
  double make_cpu = cpu_seconds() - c0;
  bool ok = a.suspects.size() == page_job_odd_ranks(o);
  std::ofstream(args.html_file, std::ios::binary) << page;
  double peak = peak_rss_mb();
  // What the page held before its data was interned: the plain hangscan/1 document.
  double plain_mb = static_cast<double>(write_json(job, &a, -1).size()) / 1e6;
  std::printf(
      "| html | %d ranks x %d threads, at most %d distinct stacks | analyze+render %.3f s wall, "
      "%.3f s CPU | %.0f MB | %s, %.2f MB page (the plain hangscan/1 document: %.1f MB) |\n",
      o.ranks, o.threads, o.stacks, make_s, make_cpu, peak, ok ? "ok" : "WRONG ANSWER",
      static_cast<double>(page.size()) / 1e6, plain_mb);
  return ok ? 0 : 1;
}

// Runs one benchmark in a child so peak RSS figures do not mix.
int in_child(int (*fn)(const Args&), const Args& args) {
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return fn(args);
  if (pid == 0) {
    int rc = fn(args);
    std::fflush(stdout);
    _exit(rc);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int int_arg(const char* v) { return std::max(1, std::atoi(v)); }

}  // namespace
}  // namespace hangscan::bench

int main(int argc, char** argv) {
  using namespace hangscan::bench;
  Args args;
  bool skip_group = false, skip_merge = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool has_value = i + 1 < argc;
    if (a == "--quick") {
      args.group_ranks = 10000;
      args.nodes = 1000;
    } else if (a == "--merge-only") {
      skip_group = true;
    } else if (a == "--group-only") {
      skip_merge = true;
    } else if (a == "--enforce") {
      args.enforce = true;
    } else if (a == "--ranks" && has_value) {
      args.group_ranks = int_arg(argv[++i]);
    } else if (a == "--depth" && has_value) {
      args.group_depth = int_arg(argv[++i]);
    } else if (a == "--nodes" && has_value) {
      args.nodes = int_arg(argv[++i]);
    } else if (a == "--ranks-per-node" && has_value) {
      args.ranks_per_node = int_arg(argv[++i]);
    } else if (a == "--threads" && has_value) {
      args.threads = int_arg(argv[++i]);
    } else if (a == "--merge-depth" && has_value) {
      args.merge_depth = int_arg(argv[++i]);
    } else if (a == "--html" && has_value) {
      args.html_file = argv[++i];
    } else if (a == "--html-ranks" && has_value) {
      args.html_ranks = int_arg(argv[++i]);
    } else {
      std::fprintf(
          stderr,
          "usage: hs_bench [--quick] [--enforce] [--group-only|--merge-only] [--ranks N] "
          "[--depth D] [--nodes N] "
          "[--ranks-per-node R] [--merge-depth D] [--threads T] [--html FILE [--html-ranks N]]\n");
      return 64;
    }
  }
  std::printf("| benchmark | input | time | peak RSS | result |\n|---|---|---|---|---|\n");
  if (!args.html_file.empty()) return in_child(run_html, args);  // the HTML benchmark alone
  int rc_group = skip_group ? 0 : in_child(run_group, args);
  int rc_merge = skip_merge ? 0 : in_child(run_merge, args);
  return rc_group ? rc_group : rc_merge;
}
