// The small records of an agent document (memory, container, python, death, diagnostics, wait
// edges, unreachable nodes) read from the cursor, each with SnapshotFields' checks.
#include "report/agent_values.h"
#include "util/parse_number.h"

#include <array>
#include <cstdint>
#include <string_view>

#include "util/diagnostic.h"

namespace hangscan {

namespace {

constexpr std::array<std::string_view, 6> kMemoryKeys = {
    "rss_bytes",          "peak_rss_bytes",     "cgroup",
    "cgroup_usage_bytes", "cgroup_limit_bytes", "gpu_bytes"};
constexpr std::array<std::string_view, 4> kContainerKeys = {"runtime", "id", "name", "pod_uid"};
constexpr std::array<std::string_view, 5> kPythonKeys = {"version", "nonblocking", "locator",
                                                         "finalizing", "gc_collecting"};
constexpr std::array<std::string_view, 6> kDiagnosticKeys = {"severity", "message", "hint",
                                                             "host",     "pid",     "tid"};
constexpr std::array<std::string_view, 5> kWaitKeys = {"host", "pid", "rank", "via", "tid"};
constexpr std::array<std::string_view, 2> kUnreachableKeys = {"host", "reason"};
constexpr std::array<std::string_view, 17> kDeathKeys = {
    "how",    "signal",      "signal_name", "exit_code", "core_dumped", "at",
    "cgroup", "limit_bytes", "rss_bytes",   "detail",    "core",        "evidence",
    "pid",    "comm",        "host",        "rank",      "slurm"};
constexpr std::array<std::string_view, 3> kSlurmKeys = {"step", "state", "exit_code"};

}  // namespace

MemoryUsage AgentValues::memory() {
  object();
  MemoryUsage mu;
  Members m;
  for (int k; (k = m.next(c_, kMemoryKeys)) >= 0;) {
    if (k == 2) {
      mu.cgroup = text();
      continue;
    }
    const auto v = static_cast<std::uint64_t>(c_.integer(0, kInt64Max));
    (k == 0   ? mu.rss_bytes
     : k == 1 ? mu.peak_rss_bytes
     : k == 3 ? mu.cgroup_usage_bytes
     : k == 4 ? mu.cgroup_limit_bytes
              : mu.gpu_bytes) = v;
  }
  return mu;
}

ContainerInfo AgentValues::container() {
  object();
  ContainerInfo ci;
  Members m;
  for (int k; (k = m.next(c_, kContainerKeys)) >= 0;) {
    (k == 0 ? ci.runtime : k == 1 ? ci.id : k == 2 ? ci.name : ci.pod_uid) = text();
  }
  return ci;
}

PythonInfo AgentValues::python() {
  object();
  PythonInfo py;
  Members m;
  for (int k; (k = m.next(c_, kPythonKeys)) >= 0;) {
    switch (k) {
      case 0:
        py.version = text();
        break;
      case 1:
        py.nonblocking = flag();
        break;
      case 2:
        py.locator = text();
        break;
      case 3:
        py.finalizing = flag();
        break;
      default:
        py.gc_collecting = flag();
        break;
    }
  }
  return py;
}

Death AgentValues::death() {
  object();
  Death d;
  Members m;
  for (int k; (k = m.next(c_, kDeathKeys)) >= 0;) {
    switch (k) {
      case 0:
        d.how = text();
        break;
      case 1:
        d.signal = static_cast<int>(c_.integer(0, 128));
        break;
      case 2:
        d.signal_name = text();
        break;
      case 3:
        d.exit_code = static_cast<int>(c_.integer(0, 255));
        break;
      case 4:
        d.core_dumped = flag();
        break;
      case 5:
        d.at = number_in(0, 1e11);
        break;
      case 6:
        d.cgroup = text();
        break;
      case 7:
        d.limit_bytes = static_cast<std::uint64_t>(c_.integer(0, kInt64Max));
        break;
      case 8:
        d.rss_bytes = static_cast<std::uint64_t>(c_.integer(0, kInt64Max));
        break;
      case 9:
        d.detail = text();
        break;
      case 10:
        d.core = text();
        break;
      case 11:
        d.evidence = string_list();
        break;
      case 12:
        d.pid = static_cast<int>(c_.integer(0, kIntMax));
        break;
      case 13:
        d.comm = text();
        break;
      case 14:
        d.host = text();
        break;
      case 15:
        d.rank = static_cast<int>(c_.integer(0, kIntMax));
        break;
      default: {
        object();
        Members sm;
        for (int j; (j = sm.next(c_, kSlurmKeys)) >= 0;)
          (j == 0 ? d.slurm_step : j == 1 ? d.slurm_state : d.slurm_exit_code) = text();
      }
    }
  }
  return d;
}

std::vector<Diagnostic> AgentValues::diagnostics() {
  std::vector<Diagnostic> out;
  array(lim_.max_list, [&] {
    object();
    Diagnostic& d = out.emplace_back();
    Members m;
    for (int k; (k = m.next(c_, kDiagnosticKeys)) >= 0;) {
      switch (k) {
        case 0: {
          if (auto s = severity_named(text_view())) d.severity = *s;
          else decline();
          break;
        }
        case 1:
          d.message = text();
          break;
        case 2:
          d.hint = text();
          break;
        case 3:
          d.host = text();
          break;
        case 4:
          d.pid = static_cast<int>(c_.integer(kIntMin, kIntMax));
          break;
        default:
          d.tid = static_cast<int>(c_.integer(kIntMin, kIntMax));
          break;
      }
    }
  });
  return out;
}

std::vector<WaitEdge> AgentValues::waits_on() {
  std::vector<WaitEdge> out;
  array(lim_.max_list, [&] {
    object();
    WaitEdge& e = out.emplace_back();
    Members m;
    for (int k; (k = m.next(c_, kWaitKeys)) >= 0;) {
      switch (k) {
        case 0:
          e.host = text();
          break;
        case 1:
          e.pid = static_cast<int>(c_.integer(0, kIntMax));
          break;
        case 2:
          e.rank = static_cast<int>(c_.integer(0, kIntMax));
          break;
        case 3:
          e.via = text();
          break;
        default:
          e.tid = static_cast<int>(c_.integer(0, kIntMax));
          break;
      }
    }
  });
  return out;
}

std::vector<UnreachableNode> AgentValues::unreachable() {
  std::vector<UnreachableNode> out;
  array(lim_.max_processes, [&] {
    object();
    UnreachableNode& u = out.emplace_back();
    Members m;
    for (int k; (k = m.next(c_, kUnreachableKeys)) >= 0;) (k == 0 ? u.host : u.reason) = text();
  });
  return out;
}

}  // namespace hangscan
