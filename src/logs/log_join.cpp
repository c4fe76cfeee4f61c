#include "logs/log_join.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "group/stack_key.h"
#include "logs/log_patterns.h"

namespace hangscan {

namespace {

// The rank's line: its last event, in time when the lines carry one, else in reading order.
struct Chosen {
  std::size_t file = 0;
  std::uint64_t line = 0;
  std::string kind;
  std::string text;
  std::optional<double> time;
};

bool later(const LogEvent& e, const Chosen& c) {
  if (e.time && c.time) return *e.time >= *c.time;
  return true;  // reading order: files in the order named, lines in order
}

std::map<int, Chosen> last_events(const LogSet& logs) {
  std::map<int, Chosen> out;
  for (const LogEvent& e : logs.events) {
    if (!e.rank) continue;
    auto it = out.find(*e.rank);
    if (it != out.end() && !later(e, it->second)) continue;
    out[*e.rank] = Chosen{e.file, e.line, log_kind_name(e.kind), e.text, e.time};
  }
  return out;
}

// Ranks with no event: the last line of their own file (by its name) stands for them, else
// their last labelled line in an interleaved file ("3: ..." of srun --label).
void add_last_lines(const LogSet& logs, std::map<int, Chosen>& out) {
  for (std::size_t i = 0; i < logs.files.size(); ++i) {
    const LogFile& f = logs.files[i];
    if (!f.rank || f.last_line_number == 0 || out.count(*f.rank)) continue;
    out[*f.rank] = Chosen{i, f.last_line_number, "last_line", f.last_line,
                          parse_line_prefix(f.last_line).time};
  }
  std::map<int, Chosen> labelled;
  for (std::size_t i = 0; i < logs.files.size(); ++i) {
    for (const auto& [rank, last] : logs.files[i].label_last_lines) {
      if (out.count(rank)) continue;
      labelled[rank] =
          Chosen{i, last.first, "last_line", last.second, parse_line_prefix(last.second).time};
    }
  }
  out.merge(labelled);
}

std::optional<double> line_time(const LogSet& logs, const Chosen& c) {
  if (c.time) return c.time;
  const LogFile& f = logs.files[c.file];
  if (c.line == f.last_line_number) return f.modified;  // the file's last write was this line
  return std::nullopt;
}

std::optional<double> capture_time(const JobSnapshot& job, const ProcessSnapshot* p) {
  if (p && p->captured_at) return p->captured_at;
  std::optional<double> latest;
  for (const ProcessSnapshot& q : job.processes) {
    if (q.captured_at && (!latest || *q.captured_at > *latest)) latest = q.captured_at;
  }
  return latest;
}

}  // namespace

void ranks_from_capture(LogSet& logs, const JobSnapshot& job) {
  std::multimap<int, const ProcessSnapshot*> by_pid;
  for (const ProcessSnapshot& p : job.processes) {
    if (p.rank && p.role != "launcher" && p.role != "helper") by_pid.emplace(p.pid, &p);
  }
  for (LogEvent& e : logs.events) {
    if (e.rank || !e.pid) continue;
    std::optional<int> rank;
    int holders = 0;
    auto [from, to] = by_pid.equal_range(*e.pid);
    for (auto it = from; it != to; ++it) {
      if (!e.host.empty() && it->second->host != e.host) continue;
      rank = it->second->rank;
      ++holders;
    }
    if (holders == 1) e.rank = rank;
  }
}

void ranks_of_deaths(const LogSet& logs, Analysis& a) {
  for (Finding& f : a.findings) {
    if (f.kind != FindingKind::death || f.rank || !f.death || !f.death->pid) continue;
    const Death& d = *f.death;
    std::set<int> named;
    for (const LogEvent& e : logs.events) {
      if (!ties_pid_to_rank(e.kind) || !e.rank || e.pid != d.pid) continue;
      if (!e.host.empty() && !d.host.empty() && !same_host(e.host, d.host)) continue;
      named.insert(*e.rank);
    }
    if (named.size() != 1) continue;
    f.rank = *named.begin();
    f.flag = true;
    f.rank_from = Finding::RankFrom::log;
    f.ranks.clear();
  }
}

void mark_launcher_stops(const LogSet& logs, const JobSnapshot& job, Analysis& a) {
  for (Finding& f : a.findings) {
    if (f.kind != FindingKind::death || f.others.empty()) continue;
    const LogEvent* first = nullptr;
    bool all = true;
    for (std::size_t m : f.others) {
      std::optional<int> rank = job.processes[m].rank;
      auto stop = std::find_if(logs.events.begin(), logs.events.end(), [&](const LogEvent& e) {
        return e.kind == LogKind::torchrun_stop && rank && e.rank == rank;
      });
      if (stop == logs.events.end()) {
        all = false;
        break;
      }
      bool timed = first && stop->time && first->time;
      if (!first || (timed ? *stop->time < *first->time : &*stop < first)) first = &*stop;
    }
    if (!all || !first) continue;
    std::string_view path = logs.files[first->file].path;
    path.remove_prefix(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
    f.stopped =
        Finding::Stop{"torchrun", first->op, fmt::format("{}:{}", path, first->line), first->time};
  }
}

std::string main_frame_place(const ProcessSnapshot& p) {
  const ThreadSnapshot* t = main_or_first_thread(p);
  if (!t || t->frames.empty()) return "";
  for (bool python : {true, false}) {
    for (const Frame& f : t->frames) {
      if ((f.kind == FrameKind::python) != python || !f.file || !f.line) continue;
      return fmt::format("{} ({}:{})", f.function, base_name(*f.file), *f.line);
    }
  }
  return t->frames.front().function;
}

std::vector<RankLastLog> join_logs(const LogSet& logs, const JobSnapshot& job) {
  std::map<int, Chosen> chosen = last_events(logs);
  add_last_lines(logs, chosen);
  std::map<int, const ProcessSnapshot*> by_rank;
  for (const ProcessSnapshot& p : job.processes) {
    if (p.rank && p.role != "launcher" && p.role != "helper") by_rank.emplace(*p.rank, &p);
  }
  std::vector<RankLastLog> out;
  for (const auto& [rank, c] : chosen) {
    RankLastLog l;
    l.rank = rank;
    l.file = logs.files[c.file].path;
    l.line = c.line;
    l.kind = c.kind;
    l.text = c.text;
    auto p = by_rank.find(rank);
    const ProcessSnapshot* proc = p == by_rank.end() ? nullptr : p->second;
    if (proc) l.where = main_frame_place(*proc);
    auto now = capture_time(job, proc);
    if (auto then = line_time(logs, c); now && then) l.before_capture_s = *now - *then;
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace hangscan
