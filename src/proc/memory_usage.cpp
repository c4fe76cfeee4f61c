#include "proc/memory_usage.h"

#include <algorithm>

#include <fmt/format.h>

#include "proc/proc_files.h"
#include "util/parse_number.h"

namespace hangscan {

namespace {

// v1 reports "no limit" as a huge page-rounded value (9223372036854771712 on x86-64).
constexpr std::uint64_t kV1Unlimited = std::uint64_t{1} << 62;

std::optional<std::uint64_t> parse_u64(std::string_view s) { return parse_int<std::uint64_t>(s); }

// "VmRSS:	  123456 kB" -> bytes.
std::optional<std::uint64_t> kb_value(std::string_view val) {
  val = trim_space(val);
  if (val.size() > 3 && val.substr(val.size() - 3) == " kB") val.remove_suffix(3);
  auto kb = parse_u64(val);
  if (!kb || *kb > (UINT64_MAX >> 10)) return std::nullopt;
  return *kb << 10;
}

std::optional<std::uint64_t> read_u64_file(const std::string& path) {
  auto text = read_text_file(path, 64);
  if (!text) return std::nullopt;
  return parse_u64(*text);
}

std::optional<std::uint64_t> read_limit_file(const std::string& path, bool& readable) {
  auto text = read_text_file(path, 64);
  readable = static_cast<bool>(text);
  if (!text) return std::nullopt;
  return parse_memory_limit(*text);
}

std::string parent_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return path.substr(0, slash);
}

// Walks from `path` up to the hierarchy's root; the tightest limit binds.
void fill_cgroup(MemoryUsage& m, const std::string& mount, const std::string& path, bool v2) {
  const char* usage_file = v2 ? "memory.current" : "memory.usage_in_bytes";
  const char* limit_file = v2 ? "memory.max" : "memory.limit_in_bytes";
  std::string own = path.empty() ? "/" : path;
  m.cgroup = own;
  m.cgroup_usage_bytes = read_u64_file(mount + (own == "/" ? "" : own) + "/" + usage_file);
  for (std::string at = own;; at = parent_of(at)) {
    std::string dir = mount + (at == "/" ? "" : at);
    bool readable = false;
    auto limit = read_limit_file(dir + "/" + limit_file, readable);
    if (limit && (!m.cgroup_limit_bytes || *limit < *m.cgroup_limit_bytes)) {
      m.cgroup_limit_bytes = limit;
      m.cgroup = at;
      m.cgroup_usage_bytes = read_u64_file(dir + "/" + usage_file);
    }
    if (at == "/") break;
  }
}

}  // namespace

StatusMemory parse_status_memory(std::string_view text) {
  StatusMemory out;
  for_each_line(text, [&](std::string_view line) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::string_view key = line.substr(0, colon);
    if (key == "VmRSS") out.rss_bytes = kb_value(line.substr(colon + 1));
    else if (key == "VmHWM") out.peak_rss_bytes = kb_value(line.substr(colon + 1));
  });
  return out;
}

std::vector<CgroupEntry> parse_proc_cgroup(std::string_view text) {
  std::vector<CgroupEntry> out;
  for_each_line(text, [&](std::string_view line) {
    auto c1 = line.find(':');
    if (c1 == std::string_view::npos) return;
    auto c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) return;
    CgroupEntry e;
    std::string_view ctl = line.substr(c1 + 1, c2 - c1 - 1);
    while (!ctl.empty()) {
      auto comma = ctl.find(',');
      if (!ctl.substr(0, comma).empty()) e.controllers.emplace_back(ctl.substr(0, comma));
      if (comma == std::string_view::npos) break;
      ctl.remove_prefix(comma + 1);
    }
    e.path = std::string(trim_space(line.substr(c2 + 1)));
    if (e.path.empty() || e.path.front() != '/') return;
    out.push_back(std::move(e));
  });
  return out;
}

CgroupMounts parse_cgroup_mounts(std::string_view text) {
  CgroupMounts out;
  for_each_line(text, [&](std::string_view line) {
    // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
    auto dash = line.find(" - ");
    if (dash == std::string_view::npos) return;
    std::vector<std::string_view> left;
    std::string_view l = line.substr(0, dash);
    while (!l.empty()) {
      auto sp = l.find(' ');
      left.push_back(l.substr(0, sp));
      if (sp == std::string_view::npos) break;
      l.remove_prefix(sp + 1);
    }
    std::string_view right = line.substr(dash + 3);
    auto sp1 = right.find(' ');
    std::string_view fstype = right.substr(0, sp1);
    if (left.size() < 5 || left[3] != "/") return;  // a bind of a sub-tree: paths would not match
    std::string mount(left[4]);
    if (fstype == "cgroup2" && out.v2.empty()) {
      out.v2 = mount;
    } else if (fstype == "cgroup" && out.v1_memory.empty()) {
      auto sp2 = right.find(' ', sp1 == std::string_view::npos ? right.size() : sp1 + 1);
      std::string_view super =
          sp2 == std::string_view::npos ? std::string_view() : right.substr(sp2 + 1);
      std::string opts = "," + std::string(trim_space(super)) + ",";
      if (opts.find(",memory,") != std::string::npos) out.v1_memory = mount;
    }
  });
  return out;
}

std::optional<std::uint64_t> parse_memory_limit(std::string_view text) {
  text = trim_space(text);
  if (text == "max") return std::nullopt;
  auto v = parse_u64(text);
  if (!v || *v >= kV1Unlimited) return std::nullopt;
  return v;
}

std::optional<std::uint64_t> parse_oom_kill_count(std::string_view text) {
  std::optional<std::uint64_t> out;
  for_each_line(text, [&](std::string_view line) {
    line = trim_space(line);
    if (line.substr(0, 9) == "oom_kill ") out = parse_u64(trim_space(line.substr(9)));
  });
  return out;
}

std::optional<CgroupOomKills> read_cgroup_oom_kills(int pid) {
  auto cg = read_text_file(fmt::format("/proc/{}/cgroup", pid), 1 << 16);
  auto mi = read_text_file("/proc/self/mountinfo", 1 << 20);
  if (!cg || !mi) return std::nullopt;
  CgroupMounts mounts = parse_cgroup_mounts(*mi);
  for (const CgroupEntry& e : parse_proc_cgroup(*cg)) {
    bool v1 =
        std::find(e.controllers.begin(), e.controllers.end(), "memory") != e.controllers.end();
    bool v2 = e.controllers.empty();
    const std::string& mount = v1 ? mounts.v1_memory : mounts.v2;
    if ((!v1 && !v2) || mount.empty()) continue;
    const char* file = v1 ? "memory.oom_control" : "memory.events";
    auto text = read_text_file(mount + (e.path == "/" ? "" : e.path) + "/" + file, 4096);
    auto n = text ? parse_oom_kill_count(*text) : std::nullopt;
    if (n && *n > 0) return CgroupOomKills{e.path, file, *n};
  }
  return std::nullopt;
}

std::optional<MemoryUsage> read_memory_usage(int pid) {
  MemoryUsage m;
  if (auto status = read_text_file(fmt::format("/proc/{}/status", pid), 1 << 16)) {
    StatusMemory sm = parse_status_memory(*status);
    m.rss_bytes = sm.rss_bytes;
    m.peak_rss_bytes = sm.peak_rss_bytes;
  }
  auto cg = read_text_file(fmt::format("/proc/{}/cgroup", pid), 1 << 16);
  auto mi = read_text_file("/proc/self/mountinfo", 1 << 20);
  if (cg && mi) {
    CgroupMounts mounts = parse_cgroup_mounts(*mi);
    const CgroupEntry* v1 = nullptr;
    const CgroupEntry* v2 = nullptr;
    std::vector<CgroupEntry> entries = parse_proc_cgroup(*cg);
    for (const CgroupEntry& e : entries) {
      if (e.controllers.empty()) v2 = &e;
      for (const std::string& c : e.controllers) {
        if (c == "memory") v1 = &e;
      }
    }
    // The memory controller lives in exactly one of the two hierarchies: v1 when a v1
    // hierarchy has it, else v2.
    if (v1 && !mounts.v1_memory.empty()) fill_cgroup(m, mounts.v1_memory, v1->path, false);
    else if (v2 && !mounts.v2.empty()) fill_cgroup(m, mounts.v2, v2->path, true);
  }
  if (!m.rss_bytes && !m.peak_rss_bytes && m.cgroup.empty()) return std::nullopt;
  return m;
}

}  // namespace hangscan
