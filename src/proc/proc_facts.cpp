#include "proc/proc_facts.h"

#include <cctype>
#include <sstream>

#include "util/parse_number.h"

namespace hangscan {
namespace {

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::vector<std::string> words_of(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// A smaps mapping header: "7f00-7f10 rw-p 00000000 00:00 0   [path]".
std::optional<std::uint64_t> header_start(std::string_view line) {
  auto dash = line.find('-');
  auto space = line.find(' ');
  if (dash == std::string_view::npos || dash == 0 || space == std::string_view::npos ||
      dash > space) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < dash; ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(line[i]))) return std::nullopt;
  }
  return parse_int<std::uint64_t>(line.substr(0, dash), 16);
}

}  // namespace

std::map<std::uint64_t, MappingFacts> parse_smaps(std::string_view text) {
  std::map<std::uint64_t, MappingFacts> out;
  MappingFacts* cur = nullptr;
  for (auto line : lines_of(text)) {
    if (auto start = header_start(line)) {
      cur = &out[*start];
      cur->known = true;
      continue;
    }
    if (cur == nullptr) continue;
    if (line.starts_with("Anonymous:")) {
      auto w = words_of(line);
      cur->anon_pages = w.size() > 1 && w[1] != "0";
    } else if (line.starts_with("VmFlags:")) {
      for (const auto& f : words_of(line.substr(8))) {
        if (f == "dd") cur->dontdump = true;
        if (f == "io" || f == "pf") cur->io = true;
        if (f == "ht") cur->hugetlb = true;
      }
    }
  }
  return out;
}

std::optional<std::uint32_t> parse_coredump_filter(std::string_view text) {
  auto w = words_of(text);
  if (w.empty()) return std::nullopt;
  return parse_int<std::uint32_t>(w[0], 16);
}

std::optional<std::uint64_t> parse_core_limit(std::string_view limits_text) {
  for (auto line : lines_of(limits_text)) {
    if (!line.starts_with("Max core file size")) continue;
    auto w = words_of(line.substr(18));
    if (w.empty()) return std::nullopt;
    if (w[0] == "unlimited") return UINT64_MAX;
    return parse_int<std::uint64_t>(w[0]);
  }
  return std::nullopt;
}

std::optional<StatFacts> parse_stat_facts(std::string_view text) {
  auto close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  auto w = words_of(text.substr(close + 1));
  // After the comm: state(0) ppid(1) pgrp(2) session(3) ... utime(11) stime(12) ... nice(16)
  if (w.size() < 17 || w[0].size() != 1) return std::nullopt;
  StatFacts s;
  s.state = w[0][0];
  s.ppid = parse_int<int>(w[1]).value_or(0);
  s.pgrp = parse_int<int>(w[2]).value_or(0);
  s.sid = parse_int<int>(w[3]).value_or(0);
  s.utime_ticks = parse_int<std::uint64_t>(w[11]).value_or(0);
  s.stime_ticks = parse_int<std::uint64_t>(w[12]).value_or(0);
  s.nice = parse_int<int>(w[16]).value_or(0);
  return s;
}

std::optional<std::string> status_field(std::string_view status_text, std::string_view key) {
  for (auto line : lines_of(status_text)) {
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ':') {
      auto w = words_of(line.substr(key.size() + 1));
      return w.empty() ? std::string() : w[0];
    }
  }
  return std::nullopt;
}

std::uint64_t status_hex(std::string_view status_text, std::string_view key) {
  auto v = status_field(status_text, key);
  return v ? parse_int<std::uint64_t>(*v, 16).value_or(0) : 0;
}

}  // namespace hangscan
