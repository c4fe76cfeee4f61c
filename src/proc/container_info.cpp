#include "proc/container_info.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "proc/memory_usage.h"
#include "proc/proc_files.h"
#include "util/hints.h"
#include "util/parse_number.h"

namespace hangscan {

namespace {

constexpr std::size_t kIdLength = 64;
constexpr std::size_t kMaxName = 253;

bool is_hex_id(std::string_view s) {
  return s.size() == kIdLength && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// A Kubernetes pod UID: 8-4-4-4-12 hex digits (systemd slices write '_' for '-').
std::optional<std::string> pod_uid(std::string_view s) {
  if (s.size() != 36) return std::nullopt;
  std::string out(s);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    char& c = out[i];
    if (dash && (c == '-' || c == '_')) c = '-';
    else if (dash || !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  }
  return out;
}

// "pod<UID>" (cgroupfs) or "kubepods[-QOS]-pod<UID>.slice" (systemd).
std::optional<std::string> pod_of(std::string_view part) {
  if (part.starts_with("pod")) return pod_uid(part.substr(3));
  if (!part.starts_with("kubepods") || !part.ends_with(".slice")) return std::nullopt;
  part.remove_suffix(6);
  auto at = part.rfind("-pod");
  if (at == std::string_view::npos) return std::nullopt;
  return pod_uid(part.substr(at + 4));
}

struct Prefix {
  std::string_view prefix;
  std::string_view runtime;
};
// Longest first where one prefix begins another; a runtime's monitor (podman's and cri-o's
// conmon) has its own scope and is no container.
constexpr Prefix kPrefixes[] = {{"libpod-conmon-", ""}, {"libpod-", "podman"},
                                {"docker-", "docker"},  {"cri-containerd-", "containerd"},
                                {"crio-conmon-", ""},   {"crio-", "cri-o"}};

// "libpod-<id>.scope", "docker-<id>.scope", "cri-containerd-<id>.scope", "crio-<id>.scope",
// podman's cgroupfs "libpod-<id>", or a bare id (docker's and Kubernetes' cgroupfs levels).
std::optional<std::pair<std::string_view, std::string_view>> container_of(std::string_view part,
                                                                          std::string_view parent,
                                                                          bool in_pod) {
  if (part.ends_with(".scope")) part.remove_suffix(6);
  for (const Prefix& p : kPrefixes) {
    if (!part.starts_with(p.prefix)) continue;
    std::string_view id = part.substr(p.prefix.size());
    if (p.runtime.empty() || !is_hex_id(id)) return std::nullopt;
    return std::make_pair(p.runtime, id);
  }
  if (!is_hex_id(part)) return std::nullopt;
  if (parent == "docker") return std::make_pair(std::string_view("docker"), part);
  if (in_pod) return std::make_pair(std::string_view(), part);
  return std::nullopt;
}

bool valid_name(std::string_view n) {
  if (n.empty() || n.size() > kMaxName || !std::isalnum(static_cast<unsigned char>(n[0])))
    return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

}  // namespace

std::optional<ContainerInfo> container_from_cgroup_path(std::string_view path) {
  ContainerInfo c;
  std::string_view parent;
  while (!path.empty()) {
    auto slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    if (part.empty()) continue;
    if (auto uid = pod_of(part)) {
      c.pod_uid = *uid;
    } else if (auto found = container_of(part, parent, !c.pod_uid.empty())) {
      // The innermost container wins (a container inside a container, a pod's container).
      c.runtime = std::string(found->first);
      c.id = std::string(found->second);
    }
    parent = part;
  }
  if (c.id.empty() && c.pod_uid.empty()) return std::nullopt;
  return c;
}

std::optional<ContainerInfo> container_from_proc_cgroup(std::string_view proc_cgroup_text) {
  std::optional<ContainerInfo> pod_only;
  for (const CgroupEntry& e : parse_proc_cgroup(proc_cgroup_text)) {
    auto c = container_from_cgroup_path(e.path);
    if (c && !c->id.empty()) return c;
    if (c && !pod_only) pod_only = c;
  }
  return pod_only;
}

std::string podman_name_from_storage(std::string_view containers_json, std::string_view id) {
  auto doc = nlohmann::json::parse(containers_json, nullptr, false);
  if (!doc.is_array()) return {};
  for (const auto& entry : doc) {
    if (!entry.is_object()) continue;
    auto eid = entry.find("id");
    if (eid == entry.end() || !eid->is_string() || eid->get_ref<const std::string&>() != id)
      continue;
    auto names = entry.find("names");
    if (names == entry.end() || !names->is_array() || names->empty()) return {};
    const auto& first = names->front();
    if (!first.is_string() || !valid_name(first.get_ref<const std::string&>())) return {};
    return first.get<std::string>();
  }
  return {};
}

std::optional<ContainerInfo> read_container_info(int pid, const std::string& storage_root) {
  auto text = read_text_file(fmt::format("/proc/{}/cgroup", pid), 1 << 16);
  if (!text) return std::nullopt;
  auto c = container_from_proc_cgroup(*text);
  if (!c || c->runtime != "podman") return c;
  // The runtime's own record; it belongs to root, never to the container.
  auto store = read_text_file(storage_root + "/overlay-containers/containers.json", 1 << 24);
  if (store) c->name = podman_name_from_storage(*store, c->id);
  return c;
}

bool status_has_capability(std::string_view status_text, int cap) {
  std::optional<std::uint64_t> eff;
  for_each_line(status_text, [&](std::string_view line) {
    if (line.starts_with("CapEff:")) eff = parse_int<std::uint64_t>(line.substr(7), 16);
  });
  return eff && cap >= 0 && cap < 64 && ((*eff >> cap) & 1u);
}

PtraceStanding read_ptrace_standing() {
  constexpr int kCapSysPtrace = 19;
  PtraceStanding s;
  auto status = read_text_file("/proc/self/status", 1 << 16);
  s.cap_sys_ptrace = status && status_has_capability(*status, kCapSysPtrace);
  s.root = geteuid() == 0;
  s.in_container = access("/.dockerenv", F_OK) == 0 || access("/run/.containerenv", F_OK) == 0;
  if (!s.in_container) {
    auto init = read_text_file("/proc/1/cgroup", 1 << 16);
    s.in_container = init && container_from_proc_cgroup(*init).has_value();
  }
  return s;
}

Error ptrace_permission_error(int pid, std::string_view what, int err,
                              const PtraceStanding& standing) {
  if (standing.in_container && standing.root && !standing.cap_sys_ptrace) {
    return Error(Errc::permission,
                 fmt::format("pid {}: permission denied{}: hangscan runs in a container without "
                             "CAP_SYS_PTRACE",
                             pid, what),
                 err, hints::container_ptrace());
  }
  return Error(Errc::permission, fmt::format("pid {}: permission denied{}", pid, what), err,
               hints::ptrace_permission());
}

}  // namespace hangscan
