#include "watch/cluster_watch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <optional>

#include "util/escape.h"
#include "watch/node_watch_reader.h"
#include "watch/watch_groups.h"
#include "watch/watch_words.h"

namespace hangscan {

namespace {

using json = nlohmann::json;

double clock_s(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// A number field, or `fallback` when absent or not a number.
double number_or(const json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

// Ranks first by rank, then processes without one; within each by node, then pid.
bool process_before(const json& a, const json& b) {
  auto rank = [](const json& p) {
    return p.contains("rank") && p["rank"].is_number_integer()
               ? p["rank"].get<long long>()
               : std::numeric_limits<long long>::max();
  };
  auto key = [&](const json& p) {
    return std::tuple(rank(p), p.value("node", std::string()), p.value("pid", 0));
  };
  return key(a) < key(b);
}

std::string who_in_document(const json& p) {
  std::string comm = p.value("comm", std::string());
  if (comm.empty()) comm = p.value("role", std::string());
  std::string node = p.value("node", std::string());
  if (p.contains("rank") && p["rank"].is_number_integer()) {
    return fmt::format("rank {} (pid {}, {}) on {}", p["rank"].get<long long>(), p.value("pid", 0),
                       escape_for_text(comm), escape_for_text(node));
  }
  return fmt::format("pid {} ({}) on {}", p.value("pid", 0), escape_for_text(comm),
                     escape_for_text(node));
}

std::string innermost_functions(const json& frames, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < frames.size() && i < n; ++i) {
    std::string f =
        frames[i].is_object() ? frames[i].value("function", std::string()) : std::string();
    if (!out.empty()) out += " < ";
    out += f.empty() ? "??" : escape_for_text(f);
  }
  return out;
}

}  // namespace

NodeClock read_node_clock() {
  // Boot time = realtime - monotonic. Bracketing the monotonic read between two realtime
  // reads bounds the error by their span (best of three tries).
  NodeClock best{0, std::numeric_limits<double>::infinity()};
  for (int i = 0; i < 3; ++i) {
    double r1 = clock_s(CLOCK_REALTIME);
    double m = clock_s(CLOCK_MONOTONIC);
    double r2 = clock_s(CLOCK_REALTIME);
    if (r2 - r1 < best.read_error_s) best = {(r1 + r2) / 2 - m, r2 - r1};
  }
  return best;
}

void stamp_node_watch(json& doc, const std::string& node, std::int64_t window_start_ns,
                      const NodeClock& clock) {
  doc["node"] = node;
  doc["window_start_unix_s"] = clock.boot_unix_s + static_cast<double>(window_start_ns) / 1e9;
  doc["clock_read_error_s"] = clock.read_error_s;
  stamp_node_watch_version(doc);
}

json merge_node_watches(const std::string& job_id, const std::vector<NodeWatchDocument>& documents,
                        std::vector<UnreachableNode> unanswered, const ReadLimits& limits) {
  struct Parsed {
    std::string node;
    NodeWatch read;
    json& doc() { return read.doc; }
  };
  std::vector<Parsed> nodes;
  for (const auto& d : documents) {
    auto read = read_node_watch(d.text, limits);
    if (!read) {
      unanswered.push_back({d.node, read.error().message});
      continue;
    }
    nodes.push_back({d.node, std::move(*read)});
  }
  double zero = nodes.empty() ? 0 : std::numeric_limits<double>::infinity();
  double read_error = 0;
  for (const auto& n : nodes) {
    zero = std::min(zero, n.read.window_start_unix_s);
    read_error = std::max(read_error, number_or(n.read.doc, "clock_read_error_s", 0));
  }

  json merged;
  merged["job_id"] = job_id;
  merged["window_start_unix_s"] = zero;
  merged["clock"] = {
      {"read_error_s", read_error},
      {"note",
       "node times are put on one axis through each node's wall clock; across nodes the "
       "order is only as good as their clock sync (NTP), which is not measured"}};
  merged["nodes"] = json::array();
  merged["processes"] = json::array();
  merged["timeline"] = json::array();
  merged["diagnostics"] = json::array();
  for (auto& n : nodes) {
    const double start = n.read.window_start_unix_s;
    const double offset = start - zero;
    merged["nodes"].push_back({{"node", n.node},
                               {"recorder", n.doc().value("recorder", std::string())},
                               {"window_s", number_or(n.doc(), "window_s", 0)},
                               {"window_start_unix_s", start},
                               {"offset_s", offset},
                               {"sample_hz", number_or(n.doc(), "sample_hz", 0)},
                               {"cpu_bucket_s", number_or(n.doc(), "cpu_bucket_s", 0)},
                               {"events", number_or(n.doc(), "events", 0)},
                               {"lost", number_or(n.doc(), "lost", 0)},
                               {"wakers_known", n.doc().value("wakers_known", false)},
                               {"processes", n.doc()["processes"].size()},
                               {"ranks_ended", n.read.ranks_ended}});
    if (n.read.stall) {
      merged["nodes"].back()["stall"] = {
          {"reason", n.read.stall->reason ? json(*n.read.stall->reason) : json()},
          {"last_progress_unix_s", n.read.stall->last_progress_unix_s
                                       ? json(*n.read.stall->last_progress_unix_s)
                                       : json()}};
    }
    for (auto& p : n.doc()["processes"]) {
      if (!p.is_object()) continue;
      p["node"] = n.node;
      merged["processes"].push_back(std::move(p));
    }
    for (auto& t : n.doc()["timeline"]) {
      if (!t.is_object()) continue;
      double local = number_or(t, "t_s", 0);
      t["node"] = n.node;
      t["node_t_s"] = local;
      t["t_s"] = local + offset;
      t["time_unix_s"] = start + local;
      merged["timeline"].push_back(std::move(t));
    }
    if (n.doc().contains("diagnostics") && n.doc()["diagnostics"].is_array()) {
      for (auto& d : n.doc()["diagnostics"]) {
        if (!d.is_object()) continue;
        d["host"] = n.node;
        merged["diagnostics"].push_back(std::move(d));
      }
    }
  }
  auto& procs = merged["processes"];
  std::stable_sort(procs.begin(), procs.end(), process_before);
  auto& timeline = merged["timeline"];
  std::stable_sort(timeline.begin(), timeline.end(), [](const json& a, const json& b) {
    return std::tuple(number_or(a, "t_s", 0), a.value("node", std::string())) <
           std::tuple(number_or(b, "t_s", 0), b.value("node", std::string()));
  });
  // The ranks of every node grouped by what they did (each node's report carries each
  // process's behaviour key; a node's older report without them leaves the job ungrouped).
  std::vector<BehaviourMember> members;
  bool keyed = true;
  for (const auto& p : procs) {
    std::optional<Behaviour> b;
    if (p.contains("behaviour")) b = behaviour_from_json(p["behaviour"]);
    if (!b) {
      keyed = false;
      break;
    }
    BehaviourMember m;
    m.pid = p.value("pid", 0);
    if (p.contains("rank") && p["rank"].is_number_integer()) m.rank = p["rank"].get<int>();
    m.role = p.value("role", std::string());
    m.host = p.value("node", std::string());
    m.behaviour = std::move(*b);
    members.push_back(std::move(m));
  }
  verdict_into_json(keyed ? group_behaviours(members) : WatchVerdict{}, merged);
  merged["unreachable"] = json::array();
  for (const auto& u : unanswered)
    merged["unreachable"].push_back({{"node", u.host}, {"reason", u.reason}});
  return merged;
}

std::string cluster_watch_text(const json& m) {
  std::string out = fmt::format("job {}: watched {} process{} on {} node{}\n",
                                escape_for_text(m.value("job_id", std::string())),
                                m["processes"].size(), m["processes"].size() == 1 ? "" : "es",
                                m["nodes"].size(), m["nodes"].size() == 1 ? "" : "s");
  for (const auto& n : m["nodes"]) {
    out += fmt::format(
        "  {}: {} process{}, {:.1f} s ({} recorder, {} events, {} lost), started +{:.3f} s\n",
        escape_for_text(n.value("node", std::string())), n.value("processes", 0),
        n.value("processes", 0) == 1 ? "" : "es", number_or(n, "window_s", 0),
        escape_for_text(n.value("recorder", std::string())), number_or(n, "events", 0),
        number_or(n, "lost", 0), number_or(n, "offset_s", 0));
  }
  for (const auto& u : m["unreachable"]) {
    out += fmt::format("  {}: no report: {}\n", escape_for_text(u.value("node", std::string())),
                       escape_for_text(u.value("reason", std::string())));
  }
  out += verdict_text(m);
  for (const auto& p : m["processes"]) {
    std::string exit = p.contains("exit") && p["exit"].is_string()
                           ? ", " + escape_for_text(p["exit"].get<std::string>())
                           : "";
    out += fmt::format("\n{}: on CPU {:.0f}% ({} samples){}\n", who_in_document(p),
                       number_or(p, "cpu_share", 0) * 100, p.value("samples", 0), exit);
    if (p.contains("top_stacks") && p["top_stacks"].is_array() && !p["top_stacks"].empty()) {
      const auto& s = p["top_stacks"][0];
      if (s.contains("frames") && s["frames"].is_array()) {
        out += fmt::format("  top on-CPU stack {:.0f}%: {}\n", number_or(s, "share", 0) * 100,
                           innermost_functions(s["frames"], 4));
      }
    }
    if (p.contains("waits") && p["waits"].is_array() && !p["waits"].empty()) {
      const auto& w = p["waits"][0];
      std::string call = w.contains("syscall") && w["syscall"].is_string()
                             ? escape_for_text(w["syscall"].get<std::string>()) + "()"
                             : "off CPU outside a system call";
      out += fmt::format("  longest wait: {:.3f} s in {} (thread {}{})\n",
                         number_or(w, "duration_s", 0), call, w.value("tid", 0),
                         w.value("ongoing", false) ? ", still waiting at the end" : "");
    }
  }
  if (!m["timeline"].empty()) {
    out +=
        "\ntimeline (all nodes, seconds from the first node's start; across nodes as good as their "
        "clock sync):\n";
  }
  for (const auto& t : m["timeline"]) {
    out += fmt::format("  +{:.3f} s  {}: {}\n", number_or(t, "t_s", 0),
                       escape_for_text(t.value("node", std::string())),
                       escape_for_text(t.value("text", std::string())));
  }
  return out;
}

}  // namespace hangscan
