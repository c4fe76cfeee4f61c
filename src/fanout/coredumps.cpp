#include "fanout/coredumps.h"

#include <fmt/format.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "fanout/runner.h"

namespace hangscan {

namespace {

using nlohmann::json;

constexpr std::string_view kCoredumpPrefix = "systemd-coredump";

std::optional<int> signal_of(const json& v) {
  if (v.is_number_integer()) return v.get<int>();
  if (!v.is_string()) return std::nullopt;
  std::string name = v.get<std::string>();
  if (name.rfind("SIG", 0) == 0) name.erase(0, 3);
  for (int s = 1; s < 65; ++s) {
    const char* abbrev = sigabbrev_np(s);
    if (abbrev != nullptr && name == abbrev) return s;
  }
  return std::nullopt;
}

std::string human(std::uint64_t bytes) {
  double v = static_cast<double>(bytes) / (1 << 20);
  if (v >= 1024) return fmt::format("{:.1f} GiB", v / 1024);
  return fmt::format("{:.1f} MiB", v);
}

}  // namespace

std::vector<std::string> coredumpctl_argv(int pid) {
  return {"coredumpctl", "--json=short", "--no-pager", "list", fmt::format("COREDUMP_PID={}", pid)};
}

std::vector<CoredumpEntry> parse_coredumpctl_list(std::string_view text) {
  std::vector<CoredumpEntry> out;
  json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (!doc.is_array()) return out;
  for (const json& row : doc) {
    if (!row.is_object()) continue;
    auto pid = row.find("pid");
    if (pid == row.end() || !pid->is_number_integer()) continue;
    CoredumpEntry e;
    e.pid = pid->get<int>();
    if (auto t = row.find("time"); t != row.end() && t->is_number_unsigned())
      e.time_s = static_cast<double>(t->get<std::uint64_t>()) / 1e6;
    if (auto s = row.find("sig"); s != row.end()) e.signal = signal_of(*s);
    if (auto c = row.find("corefile"); c != row.end() && c->is_string()) e.corefile = *c;
    if (auto x = row.find("exe"); x != row.end() && x->is_string()) e.exe = *x;
    if (auto z = row.find("size"); z != row.end() && z->is_number_unsigned())
      e.size = z->get<std::uint64_t>();
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<CoredumpEntry> coredump_of(const std::vector<CoredumpEntry>& entries, int pid,
                                         double since_s) {
  std::optional<CoredumpEntry> best;
  for (const CoredumpEntry& e : entries) {
    if (e.pid != pid || (e.time_s && *e.time_s < since_s)) continue;
    if (!best || e.time_s.value_or(0) >= best->time_s.value_or(0)) best = e;
  }
  return best;
}

std::string coredump_words(const CoredumpEntry& e) {
  std::string state = e.corefile.empty() ? std::string("unknown") : e.corefile;
  if (e.size) state += ", " + human(*e.size);
  std::string s = fmt::format("{} ({})", kCoredumpPrefix, state);
  if (e.corefile == "present" || e.corefile == "journal" || e.corefile == "truncated") {
    s += fmt::format(
        "; write it out with: coredumpctl dump {0} -o core.{0}, then: hangscan core "
        "core.{0}",
        e.pid);
  } else if (e.corefile == "none") {
    s += ": no core was stored (coredump.conf Storage=none, or larger than its limits)";
  } else if (e.corefile == "missing") {
    s += ": the stored core was removed since";
  }
  return s;
}

void locate_coredumps(JobSnapshot& job, const Deadline& deadline) {
  for (ProcessSnapshot& p : job.processes) {
    if (!p.death || p.death->core.rfind(kCoredumpPrefix, 0) != 0 || deadline.expired()) continue;
    CommandSpec spec;
    spec.argv = coredumpctl_argv(p.pid);
    spec.max_stdout = std::size_t{1} << 20;
    auto r = run_command(spec, deadline);
    if (!r || !r->succeeded()) continue;
    double since = 0;  // the process's start is not known as wall time here: newest entry wins
    if (auto e = coredump_of(parse_coredumpctl_list(r->out), p.pid, since)) {
      p.death->core = coredump_words(*e);
      p.death->evidence.push_back("coredumpctl");
    }
  }
}

}  // namespace hangscan
