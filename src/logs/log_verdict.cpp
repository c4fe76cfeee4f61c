#include "logs/log_verdict.h"

#include <algorithm>
#include <map>
#include <set>

namespace hangscan {

bool ties_pid_to_rank(LogKind kind) {
  return kind == LogKind::torchrun_failure || kind == LogKind::nccl_init;
}

bool is_failure(LogKind kind) {
  switch (kind) {
    case LogKind::seq_status:
    case LogKind::nccl_init:
    case LogKind::torchrun_stop:
      return false;
    default:
      return true;
  }
}

const char* log_kind_name(LogKind kind) {
  switch (kind) {
    case LogKind::collective_timeout:
      return "collective_timeout";
    case LogKind::seq_status:
      return "seq_status";
    case LogKind::dump_signal:
      return "dump_signal";
    case LogKind::gloo_timeout:
      return "gloo_timeout";
    case LogKind::peer_closed:
      return "peer_closed";
    case LogKind::exception:
      return "exception";
    case LogKind::cuda_error:
      return "cuda_error";
    case LogKind::nccl_warn:
      return "nccl_warn";
    case LogKind::nccl_init:
      return "nccl_init";
    case LogKind::torchrun_failure:
      return "torchrun_failure";
    case LogKind::torchrun_stop:
      return "torchrun_stop";
    case LogKind::slurm_cancelled:
      return "slurm_cancelled";
    case LogKind::srun_task:
      return "srun_task";
    case LogKind::slurm_oom:
      return "slurm_oom";
    case LogKind::kernel_oom:
      return "kernel_oom";
  }
  return "unknown";
}

namespace {

bool is_timeout(LogKind k) {
  return k == LogKind::collective_timeout || k == LogKind::gloo_timeout ||
         k == LogKind::dump_signal;
}

bool is_death(const LogEvent& e) {
  switch (e.kind) {
    case LogKind::torchrun_failure:
    case LogKind::slurm_cancelled:
    case LogKind::slurm_oom:
    case LogKind::kernel_oom:
      return true;
    case LogKind::srun_task:
      return e.op != "Exited" || e.exit_code.value_or(1) != 0;
    default:
      return false;
  }
}

bool own_exception(const LogEvent& e) {
  return e.kind == LogKind::exception && e.op != "communication";
}

// The earliest failure by the time printed on its line; without any time, the first one read.
// A rank's own exception comes before any failure that is only a consequence (a lost peer, a
// timeout): those are printed by the ranks that waited, often in the same second.
std::optional<std::size_t> first_failure(const LogSet& logs) {
  std::optional<std::size_t> by_time, by_order;
  bool own = std::any_of(logs.events.begin(), logs.events.end(), own_exception);
  for (std::size_t i = 0; i < logs.events.size(); ++i) {
    const LogEvent& e = logs.events[i];
    if (!is_failure(e.kind) || (own && !own_exception(e))) continue;
    if (!by_order) by_order = i;
    if (e.time && (!by_time || *e.time < *logs.events[*by_time].time)) by_time = i;
  }
  return by_time ? by_time : by_order;
}

std::vector<LaggingRanks> lagging_ranks(const LogSet& logs) {
  // pg -> rank -> highest last-enqueued number the rank printed
  std::map<int, std::map<int, long long>> enqueued;
  std::map<int, std::map<long long, std::pair<int, std::string>>>
      timeouts;  // pg -> seq -> count, op
  std::map<int, std::set<int>> timed_out;
  for (const LogEvent& e : logs.events) {
    if (!e.rank) continue;
    int pg = e.pg.value_or(0);
    if (e.kind == LogKind::seq_status && e.last_enqueued) {
      auto [it, fresh] = enqueued[pg].try_emplace(*e.rank, *e.last_enqueued);
      if (!fresh) it->second = std::max(it->second, *e.last_enqueued);
    }
    if (e.kind == LogKind::collective_timeout && e.seq) {
      auto& slot = timeouts[pg][*e.seq];
      ++slot.first;
      slot.second = e.op;
      timed_out[pg].insert(*e.rank);
    }
  }
  std::vector<LaggingRanks> out;
  for (const auto& [pg, ranks] : enqueued) {
    long long lo = ranks.begin()->second, hi = lo;
    for (const auto& [r, n] : ranks) lo = std::min(lo, n), hi = std::max(hi, n);
    if (ranks.size() < 2 || lo == hi) continue;
    LaggingRanks l;
    l.pg = pg;
    l.last_enqueued = lo;
    l.others_enqueued = hi;
    for (const auto& [r, n] : ranks) {
      if (n == lo) l.ranks.push_back(r);
    }
    l.timed_out.assign(timed_out[pg].begin(), timed_out[pg].end());
    int best = 0;
    for (const auto& [seq, slot] : timeouts[pg]) {
      if (slot.first > best) best = slot.first, l.timed_out_seq = seq, l.op = slot.second;
    }
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace

LogFindings analyze_logs(const LogSet& logs, std::optional<int> world) {
  LogFindings f;
  f.first_failure = first_failure(logs);
  f.lagging = lagging_ranks(logs);
  std::set<int> known, failed;
  bool timeouts = false;
  for (const LogFile& file : logs.files) {
    if (file.rank && file.error.empty()) known.insert(*file.rank);
  }
  for (std::size_t i = 0; i < logs.events.size(); ++i) {
    const LogEvent& e = logs.events[i];
    if (is_death(e)) f.deaths.push_back(i);
    if (!e.rank) continue;
    known.insert(*e.rank);
    if (is_failure(e.kind)) failed.insert(*e.rank);
    if (is_timeout(e.kind)) timeouts = true;
  }
  f.world = world;
  if (!f.world && !known.empty()) f.world = *known.rbegin() + 1;
  if (world) {
    for (int r = 0; r < *world; ++r) known.insert(r);
  }
  f.failed.assign(failed.begin(), failed.end());
  std::set<int> raised, own_failure, communication;
  for (const LogEvent& e : logs.events) {
    if (!e.rank || !is_failure(e.kind)) continue;
    if (own_exception(e)) raised.insert(*e.rank);
    if (is_timeout(e.kind) || e.kind == LogKind::peer_closed ||
        (e.kind == LogKind::exception && !own_exception(e))) {
      communication.insert(*e.rank);
    } else if (e.kind != LogKind::torchrun_failure && e.kind != LogKind::srun_task) {
      own_failure.insert(*e.rank);  // deaths reported by a launcher say how, not why
    }
  }
  for (int r : communication) {
    if (!own_failure.count(r)) f.communication_only.push_back(r);
  }
  std::set<int> suspects;
  // A rank that raised while the others only lost it is the cause (torchrun's "root cause" is
  // the first to exit, often a victim).
  if (!raised.empty() && !f.communication_only.empty()) {
    f.raised.assign(raised.begin(), raised.end());
    suspects.insert(raised.begin(), raised.end());
  }
  for (const LaggingRanks& l : f.lagging) suspects.insert(l.ranks.begin(), l.ranks.end());
  if (timeouts) {
    for (int r : known) {
      if (!failed.count(r)) f.silent.push_back(r);
    }
    // Everyone silent but one is no story about the silent ones.
    if (f.silent.size() * 2 < known.size()) suspects.insert(f.silent.begin(), f.silent.end());
  }
  f.suspects.assign(suspects.begin(), suspects.end());
  return f;
}

}  // namespace hangscan
