#include "fanout/core_round.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "fanout/hostlist.h"
#include "report/bounded_json.h"
#include "util/parse_number.h"

namespace hangscan {

namespace {

using nlohmann::json;

constexpr std::string_view kCoreSchema = "hangscan-cores/1";
// A node writes a few cores; these bounds only keep a broken or hostile agent small.
constexpr std::size_t kMaxDocument = std::size_t{4} << 20;
constexpr std::size_t kMaxOutcomes = std::size_t{1} << 16;
constexpr std::size_t kMaxString = 4096;
constexpr std::size_t kMaxWarnings = 64;

std::optional<long long> whole_number(std::string_view text) {
  if (text != trim_space(text)) return std::nullopt;
  return parse_int<long long>(text);
}

Error bad(const std::string& what) {
  return Error(Errc::bad_data, fmt::format("core answer: {}", what));
}

// One entry of "cores", read with the bounds every untrusted document gets (BoundedFields).
CoreOutcome read_outcome(const BoundedFields& f, const json& v, const JsonPath& path) {
  constexpr long long kMaxLong = std::numeric_limits<long long>::max();
  const json& o = f.object(v, path);
  CoreOutcome c;
  c.node = f.str(o, "node", path);
  if (!validate_host_name(c.node)) fail(at(path, "node"), "not a host name");
  c.pid = f.req_int(o, "pid", path, 1, kIntMax);
  c.rank = f.opt_int(o, "rank", path, 0, kIntMax);
  c.path = f.str(o, "path", path);
  c.error = f.str(o, "error", path);
  c.hint = f.str(o, "hint", path);
  if (c.written()) {
    if (c.path.empty()) fail(path, "has neither a path nor an error");
    for (const char* key : {"file_size", "pause_us"}) {
      if (!BoundedFields::member(o, key)) fail(at(path, key), "missing");
    }
    c.file_size = static_cast<std::uint64_t>(*f.opt_int64(o, "file_size", path, 0, kMaxLong));
    c.pause_us = *f.opt_int64(o, "pause_us", path, 0, kMaxLong);
  }
  c.warnings = f.strings(o, "warnings", path);
  return c;
}

CoreOutcome unanswered(const CoreRequest& r, std::string why) {
  CoreOutcome c;
  c.node = r.node;
  c.pid = r.pid;
  c.rank = r.rank;
  c.error = std::move(why);
  return c;
}

}  // namespace

std::string format_core_request(const CoreRequest& r) {
  std::string out = r.rank ? fmt::format("{}:{}:{}", r.node, r.pid, *r.rank)
                           : fmt::format("{}:{}", r.node, r.pid);
  if (r.start_ticks != 0) out += fmt::format("@{}", r.start_ticks);
  return out;
}

Result<CoreRequest> parse_core_request(std::string_view text) {
  auto usage = [&](const std::string& why) {
    return Error(Errc::usage, fmt::format("--write-core '{}': {}", text.substr(0, 300), why), 0,
                 "give NODE:PID or NODE:PID:RANK, optionally followed by @START");
  };
  CoreRequest r;
  if (auto at = text.rfind('@'); at != std::string_view::npos) {
    auto start = whole_number(text.substr(at + 1));
    if (!start || *start <= 0) return usage("the start time after '@' is not a positive number");
    r.start_ticks = static_cast<std::uint64_t>(*start);
    text = text.substr(0, at);
  }
  std::size_t a = text.find(':');
  if (a == std::string_view::npos) return usage("no ':' after the node");
  std::size_t b = text.find(':', a + 1);
  r.node = std::string(text.substr(0, a));
  if (auto st = validate_host_name(r.node); !st) return usage(st.error().what());
  auto pid = whole_number(text.substr(a + 1, b == std::string_view::npos ? text.npos : b - a - 1));
  if (!pid || *pid <= 0 || *pid > std::numeric_limits<int>::max())
    return usage("the pid is not a positive number");
  r.pid = static_cast<int>(*pid);
  if (b != std::string_view::npos) {
    auto rank = whole_number(text.substr(b + 1));
    if (!rank || *rank < 0 || *rank > std::numeric_limits<int>::max())
      return usage("the rank is not a number >= 0");
    r.rank = static_cast<int>(*rank);
  }
  return r;
}

std::string write_core_outcomes_json(const std::string& node,
                                     const std::vector<CoreOutcome>& outcomes) {
  json cores = json::array();
  for (const auto& c : outcomes) {
    json o = {{"node", c.node}, {"pid", c.pid}, {"rank", c.rank ? json(*c.rank) : json(nullptr)}};
    if (c.written()) {
      o["path"] = c.path;
      o["file_size"] = c.file_size;
      o["pause_us"] = c.pause_us;
      if (!c.warnings.empty()) o["warnings"] = c.warnings;
    } else {
      o["error"] = c.error;
      if (!c.hint.empty()) o["hint"] = c.hint;
    }
    cores.push_back(std::move(o));
  }
  json doc = {{"schema", kCoreSchema}, {"node", node}, {"cores", std::move(cores)}};
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::vector<CoreOutcome>> read_core_outcomes_json(std::string_view text) {
  if (text.size() > kMaxDocument) return bad(fmt::format("larger than {} bytes", kMaxDocument));
  json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) return bad("not valid JSON");
  if (!doc.is_object()) return bad("not an object");
  auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_string() || *schema != kCoreSchema) {
    return bad(fmt::format("schema is not {}", kCoreSchema));
  }
  const BoundedFields fields(kMaxString, kMaxWarnings);
  try {
    const JsonPath root;
    const json& cores = fields.array(doc, "cores", root, kMaxOutcomes, true);
    const JsonPath cores_path = at(root, "cores");
    std::vector<CoreOutcome> out;
    out.reserve(cores.size());
    for (std::size_t i = 0; i < cores.size(); ++i)
      out.push_back(read_outcome(fields, cores[i], at(cores_path, i)));
    return out;
  } catch (const BadDocument& e) {
    return bad(e.message);
  }
}

std::vector<std::string> core_round_agent_args(const std::vector<CoreRequest>& requests,
                                               const std::string& dir,
                                               const std::string& max_size) {
  std::vector<std::string> args{"--gcore-dir", dir, "--gcore-max-size", max_size};
  for (const auto& r : requests) {
    args.emplace_back("--write-core");
    args.push_back(format_core_request(r));
  }
  return args;
}

std::vector<CoreOutcome> pair_core_outcomes(const std::vector<CoreRequest>& requests,
                                            const std::vector<std::string>& request_hosts,
                                            const AgentAnswers& answers) {
  std::map<std::string, Result<std::vector<CoreOutcome>>> by_host;
  for (const auto& d : answers.documents) by_host.emplace(d.node, read_core_outcomes_json(d.text));
  std::vector<CoreOutcome> out;
  out.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const CoreRequest& r = requests[i];
    const std::string& host = i < request_hosts.size() ? request_hosts[i] : r.node;
    auto doc = by_host.find(host);
    if (doc == by_host.end()) {
      auto u = std::find_if(answers.unreachable.begin(), answers.unreachable.end(),
                            [&](const UnreachableNode& n) { return n.host == host; });
      out.push_back(
          unanswered(r, fmt::format("node {} did not answer: {}", host,
                                    u != answers.unreachable.end() ? u->reason : "no answer")));
      continue;
    }
    if (!doc->second) {
      out.push_back(unanswered(
          r, fmt::format("node {} answered badly: {}", host, doc->second.error().what())));
      continue;
    }
    const auto& got = *doc->second;
    auto it = std::find_if(got.begin(), got.end(), [&](const CoreOutcome& c) {
      return c.pid == r.pid && c.node == r.node;
    });
    if (it == got.end()) {
      out.push_back(unanswered(r, fmt::format("the agent on {} did not mention pid {} of node {}",
                                              host, r.pid, r.node)));
      continue;
    }
    CoreOutcome c = *it;
    c.node = host;  // report it under the name the report uses
    if (!c.rank) c.rank = r.rank;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace hangscan
