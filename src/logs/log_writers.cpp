#include "logs/log_writers.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "group/rank_set.h"
#include "logs/log_verdict.h"
#include "util/escape.h"
#include "util/parse_number.h"

namespace hangscan {

namespace {

// Log text is the job's, not ours: shown in the visible form of util/escape.h, never sent raw.
std::string visible(std::string_view s) { return escape_for_text(s); }

std::string ranks_text(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", RankSet(ranks).to_string());
}

// The file's name, with its folder when the name alone says nothing (torchrun's
// ".../attempt_0/3/stderr.log" is "3/stderr.log"), and the line.
std::string place(const LogSet& logs, const LogEvent& e) {
  const std::string& path = logs.files[e.file].path;
  std::size_t slash = path.rfind('/');
  std::string_view name(path);
  if (slash != std::string::npos) {
    name.remove_prefix(slash + 1);
    if ((name == "stderr.log" || name == "stdout.log") && slash > 0) {
      std::size_t up = path.rfind('/', slash - 1);
      name = std::string_view(path).substr(up == std::string::npos ? 0 : up + 1);
    }
  }
  return visible(name) + ":" + std::to_string(e.line);
}

std::string event_words(const LogEvent& e) {
  switch (e.kind) {
    case LogKind::collective_timeout:
      return fmt::format("timed out in {} {}", e.op, e.seq.value_or(-1));
    case LogKind::seq_status:
      return fmt::format("last enqueued {}, last completed {}", e.last_enqueued.value_or(-1),
                         e.last_completed.value_or(-1));
    case LogKind::dump_signal:
      return fmt::format("dump signal: rank {} timed out", e.peer_rank.value_or(-1));
    case LogKind::torchrun_failure:
      return fmt::format("torchrun {}: exit code {}{}", e.what, e.exit_code.value_or(0),
                         e.pid ? fmt::format(" (pid {})", *e.pid) : "");
    case LogKind::torchrun_stop:
      return fmt::format("torchrun sent {} to pid {} (ending its workers)", e.op,
                         e.pid.value_or(0));
    case LogKind::srun_task:
      return e.op == "Exited"
                 ? fmt::format("srun: exited with exit code {}", e.exit_code.value_or(0))
                 : "srun: " + e.op;
    case LogKind::slurm_cancelled:
      return fmt::format("slurm: {} cancelled ({})", e.what, e.op);
    case LogKind::slurm_oom:
      return fmt::format("slurm: oom-kill in {} (its memory cgroup's limit)", e.what);
    case LogKind::kernel_oom:
      return fmt::format("kernel OOM killer killed pid {} ({})", e.pid.value_or(0), e.what);
    default:
      return e.what.empty() ? e.text : e.what;
  }
}

std::string rank_of(const LogEvent& e) {
  return e.rank ? fmt::format("rank {}", *e.rank) : "no rank";
}

}  // namespace

namespace {

// `shown`: the log's words as text shows them (escaped), or as they are (for a capture's
// analysis, whose writers escape). `where`: a rank's stack, said after a finding of that rank.
using Shown = std::string (*)(std::string_view);
std::string as_is(std::string_view s) { return std::string(s); }

std::string where_suffix(const std::vector<int>& ranks, const std::map<int, std::string>* where) {
  if (!where || ranks.size() != 1) return "";
  auto it = where->find(ranks.front());
  return it == where->end() || it->second.empty() ? "" : "; it is in " + it->second;
}

std::vector<std::string> suspect_sentences(const LogSet& logs, const LogFindings& f, Shown shown,
                                           const std::map<int, std::string>* where) {
  std::vector<std::string> out;
  for (const LaggingRanks& l : f.lagging) {
    std::string waited;
    if (!l.timed_out.empty() && l.timed_out_seq)
      waited =
          fmt::format("; {} timed out in {} {}", ranks_text(l.timed_out), l.op, *l.timed_out_seq);
    out.push_back(fmt::format("{} never enqueued collective {} of PG {} (last enqueued {}{}){}",
                              ranks_text(l.ranks), l.last_enqueued + 1, l.pg, l.last_enqueued,
                              waited, where_suffix(l.ranks, where)));
  }
  if (!f.raised.empty()) {
    std::string own, lost;
    for (const LogEvent& e : logs.events) {
      if (!e.rank) continue;
      bool mine = std::find(f.raised.begin(), f.raised.end(), *e.rank) != f.raised.end();
      if (own.empty() && mine && e.kind == LogKind::exception && e.op != "communication")
        own = shown(e.what) + (e.where.empty() ? "" : " (" + shown(e.where) + ")");
      if (lost.empty() && !mine && e.kind == LogKind::exception && e.op == "communication")
        lost = shown(e.what);
    }
    out.push_back(fmt::format("{} raised {}; {} failed only in communication{}{}",
                              ranks_text(f.raised), own, ranks_text(f.communication_only),
                              lost.empty() ? "" : " (" + lost + ")",
                              where_suffix(f.raised, where)));
  }
  std::vector<int> silent;
  for (int r : f.silent) {
    bool lagging = false;
    for (const LaggingRanks& l : f.lagging)
      lagging = lagging || std::find(l.ranks.begin(), l.ranks.end(), r) != l.ranks.end();
    bool suspect = std::find(f.suspects.begin(), f.suspects.end(), r) != f.suspects.end();
    if (suspect && !lagging) silent.push_back(r);
  }
  if (!silent.empty()) {
    std::string first;
    if (f.first_failure) first = " (" + shown(event_words(logs.events[*f.first_failure])) + ")";
    out.push_back(fmt::format("{} reported no failure while {} did{}{}", ranks_text(silent),
                              ranks_text(f.failed), first, where_suffix(silent, where)));
  }
  return out;
}

}  // namespace

std::vector<std::string> log_suspect_reasons(const LogSet& logs, const LogFindings& f) {
  return suspect_sentences(logs, f, visible, nullptr);
}

void add_log_sentences(const LogSet& logs, const LogFindings& f, Analysis& a) {
  std::map<int, std::string> where;
  for (const RankLastLog& l : a.last_logs) where[l.rank] = l.where;
  a.log_verdict = suspect_sentences(logs, f, as_is, &where);
}

std::string render_logs_text(const LogSet& logs, const LogFindings& f, std::size_t max_events) {
  std::string out;
  std::size_t unread = 0;
  for (const LogFile& file : logs.files) unread += !file.error.empty();
  out += fmt::format(
      "hangscan logs: {} files{}, {} events, {}{}\n", logs.files.size(),
      unread ? fmt::format(" ({} not read)", unread) : "", logs.events.size(),
      f.failed.empty() ? "no rank reported a failure" : ranks_text(f.failed) + " reported failures",
      f.world ? fmt::format(", world size {}", *f.world) : "");
  for (const std::string& reason : log_suspect_reasons(logs, f)) out += "SUSPECT " + reason + "\n";
  if (f.first_failure) {
    const LogEvent& e = logs.events[*f.first_failure];
    out +=
        fmt::format("first failure: {} at {}{}: {}{}\n", rank_of(e), place(logs, e),
                    e.time ? "" : " (no time printed: first in the files' order)",
                    visible(event_words(e)), e.where.empty() ? "" : " (" + visible(e.where) + ")");
  }
  for (std::size_t i : f.deaths) {
    const LogEvent& e = logs.events[i];
    if (e.kind == LogKind::torchrun_failure && e.what == "root cause" && e.rank &&
        std::find(f.communication_only.begin(), f.communication_only.end(), *e.rank) !=
            f.communication_only.end())
      out += fmt::format(
          "note: torchrun's root cause is rank {}, which failed only in "
          "communication: the first to exit, not the first to fail\n",
          *e.rank);
  }
  for (std::size_t i : f.deaths) {
    const LogEvent& e = logs.events[i];
    out += fmt::format("died: {}: {} ({})\n", rank_of(e), visible(event_words(e)), place(logs, e));
  }
  for (const LogFile& file : logs.files) {
    if (!file.error.empty())
      out += fmt::format("not read: {}: {}\n", visible(file.path), file.error);
  }
  if (!logs.events.empty()) out += "\nEvents:\n";
  std::size_t shown = 0;
  for (const LogEvent& e : logs.events) {
    if (shown++ >= max_events) break;
    out += fmt::format("  {:<24} {:<8} {:<18} {}{}\n", place(logs, e), rank_of(e),
                       log_kind_name(e.kind), visible(event_words(e)),
                       e.where.empty() ? "" : " (" + visible(e.where) + ")");
  }
  if (logs.events.size() > max_events)
    out += fmt::format("  ... {} more events (--json has them all)\n",
                       logs.events.size() - max_events);
  return out;
}

std::string render_logs_json(const LogSet& logs, const LogFindings& f) {
  using nlohmann::json;
  json doc;
  doc["schema"] = "hangscan-logs/1";
  json files = json::array();
  for (const LogFile& file : logs.files) {
    files.push_back({{"path", file.path},
                     {"rank", file.rank ? json(*file.rank) : json()},
                     {"bytes", file.bytes},
                     {"lines", file.lines},
                     {"cut_lines", file.cut_lines},
                     {"compressed", file.compressed},
                     {"error", file.error.empty() ? json() : json(file.error)}});
  }
  doc["files"] = files;
  auto opt = [](const auto& o) { return o ? json(*o) : json(); };
  json events = json::array();
  for (const LogEvent& e : logs.events) {
    events.push_back({{"kind", log_kind_name(e.kind)},
                      {"file", e.file},
                      {"line", e.line},
                      {"time", opt(e.time)},
                      {"rank", opt(e.rank)},
                      {"pid", opt(e.pid)},
                      {"host", e.host},
                      {"pg", opt(e.pg)},
                      {"seq", opt(e.seq)},
                      {"last_enqueued", opt(e.last_enqueued)},
                      {"last_completed", opt(e.last_completed)},
                      {"exit_code", opt(e.exit_code)},
                      {"peer_rank", opt(e.peer_rank)},
                      {"op", e.op},
                      {"what", e.what},
                      {"where", e.where},
                      {"text", e.text}});
  }
  doc["events"] = events;
  doc["dropped_events"] = logs.dropped_events;
  doc["first_failure"] = opt(f.first_failure);
  json lagging = json::array();
  for (const LaggingRanks& l : f.lagging) {
    lagging.push_back({{"pg", l.pg},
                       {"ranks", l.ranks},
                       {"last_enqueued", l.last_enqueued},
                       {"others_enqueued", l.others_enqueued},
                       {"timed_out", l.timed_out},
                       {"timed_out_seq", opt(l.timed_out_seq)},
                       {"op", l.op}});
  }
  doc["lagging"] = lagging;
  doc["silent"] = f.silent;
  doc["failed"] = f.failed;
  doc["raised"] = f.raised;
  doc["communication_only"] = f.communication_only;
  doc["deaths"] = f.deaths;
  doc["suspects"] = f.suspects;
  doc["suspect_reasons"] = log_suspect_reasons(logs, f);
  doc["world_size"] = opt(f.world);
  return doc.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace hangscan
