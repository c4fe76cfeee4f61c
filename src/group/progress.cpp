// Stuck / progressing / spinning from several snapshots.
#include "group/progress.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "group/stack_key.h"

namespace hangscan {

namespace {

// Locals are not compared: a loop spinning on one line changes its counters at every sample,
// and --locals must not make it "progressing" where the same run without them is "spinning".
bool same_python(const Frame& a, const Frame& b) {
  return a.function == b.function && a.file == b.file && a.line == b.line;
}

// Python stacks: identical Python frames (functions, files, lines). Native stacks: identical
// at function granularity except for up to kInnerSlackFrames innermost frames on each side.
bool same_place(const ThreadSnapshot& a, const ThreadSnapshot& b) {
  auto pa = python_frames(a);
  auto pb = python_frames(b);
  if (!pa.empty() || !pb.empty()) {
    return std::equal(pa.begin(), pa.end(), pb.begin(), pb.end(),
                      [](const Frame* x, const Frame* y) { return same_python(*x, *y); });
  }
  FrameRange ra = key_frames(a, 0);
  FrameRange rb = key_frames(b, 0);
  std::size_t common = 0;
  while (common < ra.size() && common < rb.size() &&
         same_key_frame(*(ra.end - 1 - common), *(rb.end - 1 - common),
                        GroupOptions::Granularity::function)) {
    ++common;
  }
  return ra.size() - common <= kInnerSlackFrames && rb.size() - common <= kInnerSlackFrames &&
         (common > 0 || (ra.size() == 0 && rb.size() == 0));
}

std::uint64_t ticks_of(const ProcessSnapshot& p, int tid) {
  for (const ThreadSnapshot& t : p.threads) {
    if (t.tid == tid) return t.cpu_ticks;
  }
  return 0;
}

using Appearances = std::vector<std::pair<std::size_t, const ProcessSnapshot*>>;

// Threads blocked at one place through every appearance, with no CPU time used in between
// beyond what hangscan's own stops cost; and the calls of those the stops restarted.
void carried_blocked(const Appearances& apps, ProcessProgress& pr) {
  std::vector<std::pair<int, double>>& out = pr.blocked;
  const ProcessSnapshot& first = *apps.front().second;
  const ProcessSnapshot& last = *apps.back().second;
  if (!first.captured_at || !last.captured_at) return;
  for (const ThreadSnapshot& t0 : first.threads) {
    if (!t0.blocked_s) continue;
    bool still = true;
    for (std::size_t i = 1; i < apps.size() && still; ++i) {
      const ThreadSnapshot* t = thread_by_tid(*apps[i].second, t0.tid);
      // Our own stop and resume may be charged one clock tick each.
      still = t && t->blocked_s && t->cpu_ticks <= t0.cpu_ticks + i && same_place(t0, *t);
    }
    if (!still) continue;
    out.emplace_back(t0.tid, *t0.blocked_s + (*last.captured_at - *first.captured_at));
    const ThreadSnapshot* now = thread_by_tid(last, t0.tid);
    if (now->syscall == "restart_syscall" && t0.syscall && *t0.syscall != "restart_syscall")
      pr.restarted.push_back({t0.tid, *t0.syscall, t0.syscall_args});
  }
}

}  // namespace

std::vector<ProcessProgress> compute_progress(const std::vector<JobSnapshot>& samples,
                                              double interval_seconds,
                                              long clock_ticks_per_second) {
  std::vector<ProcessProgress> out;
  if (samples.empty()) return out;
  // (host, pid) -> appearances in sample order
  std::map<std::pair<std::string, int>, Appearances> seen;
  for (std::size_t s = 0; s < samples.size(); ++s) {
    for (const ProcessSnapshot& p : samples[s].processes) seen[{p.host, p.pid}].emplace_back(s, &p);
  }
  for (const ProcessSnapshot& first : samples.front().processes) {
    const auto& apps = seen[{first.host, first.pid}];
    if (apps.size() < 2) continue;
    ProcessProgress pr;
    pr.host = first.host;
    pr.pid = first.pid;
    pr.samples = static_cast<int>(apps.size());
    pr.stuck = true;
    const ThreadSnapshot* base = main_or_first_thread(first);
    for (std::size_t i = 1; i < apps.size() && pr.stuck; ++i) {
      const ThreadSnapshot* t = main_or_first_thread(*apps[i].second);
      pr.stuck = base && t && same_place(*base, *t);
    }
    const ProcessSnapshot& last = *apps.back().second;
    double elapsed = interval_seconds * static_cast<double>(apps.back().first - apps.front().first);
    if (elapsed > 0 && clock_ticks_per_second > 0) {
      std::uint64_t delta = 0;
      for (const ThreadSnapshot& t : last.threads) {
        std::uint64_t before = ticks_of(first, t.tid);
        if (t.cpu_ticks > before) delta += t.cpu_ticks - before;
      }
      pr.cpu_percent = 100.0 * static_cast<double>(delta) /
                       static_cast<double>(clock_ticks_per_second) / elapsed;
    }
    carried_blocked(apps, pr);
    out.push_back(pr);
  }
  return out;
}

void apply_progress(JobSnapshot& job, const std::vector<ProcessProgress>& progress) {
  std::map<std::pair<std::string, int>, const ProcessProgress*> by_id;
  for (const ProcessProgress& p : progress) by_id[{p.host, p.pid}] = &p;
  for (ProcessSnapshot& p : job.processes) {
    auto it = by_id.find({p.host, p.pid});
    if (it == by_id.end()) continue;
    p.progress = it->second->stuck ? "stuck" : "progressing";
    p.cpu_percent = it->second->cpu_percent;
    for (const auto& [tid, blocked] : it->second->blocked) {
      for (ThreadSnapshot& t : p.threads) {
        if (t.tid == tid) t.blocked_s = std::round(blocked * 1000.0) / 1000.0;
      }
    }
    for (const ProcessProgress::Call& c : it->second->restarted) {
      for (ThreadSnapshot& t : p.threads) {
        if (t.tid != c.tid) continue;
        t.syscall = c.syscall;
        t.syscall_args = c.args;
      }
    }
  }
}

std::string progress_word(const ProcessSnapshot& p) {
  if (!p.progress) return {};
  if (*p.progress != "stuck") return *p.progress;
  if (p.cpu_percent < 0) return "stuck";
  return p.cpu_percent > kSpinningCpuPercent ? "spinning" : "blocked";
}

}  // namespace hangscan
