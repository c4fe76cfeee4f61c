#include "corewrite/core_pick.h"

#include <algorithm>

#include <fmt/core.h>

namespace hangscan {

std::optional<GcoreMode> parse_gcore_mode(const std::string& text) {
  if (text == "one-per-group") return GcoreMode::one_per_group;
  if (text == "suspects") return GcoreMode::suspects;
  if (text == "all") return GcoreMode::all;
  return std::nullopt;
}

std::vector<std::size_t> pick_core_members(const Analysis& analysis, GcoreMode mode,
                                           std::size_t process_count) {
  std::vector<std::size_t> out;
  switch (mode) {
    case GcoreMode::all:
      for (std::size_t i = 0; i < process_count; ++i) out.push_back(i);
      return out;
    case GcoreMode::one_per_group:
      for (const auto& g : analysis.groups) {
        if (!g.members.empty()) out.push_back(g.members.front());
      }
      [[fallthrough]];
    case GcoreMode::suspects:
      out.insert(out.end(), analysis.suspect_members.begin(), analysis.suspect_members.end());
      break;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  out.erase(std::remove_if(out.begin(), out.end(),
                           [process_count](std::size_t i) { return i >= process_count; }),
            out.end());
  return out;
}

const char* core_role(const Analysis& analysis, std::size_t i) {
  if (analysis.is_suspect(i)) return "suspect";
  if (i < analysis.group_of.size() && analysis.group_of[i] != Analysis::kNoGroup) {
    const Group& g = analysis.groups[analysis.group_of[i]];
    if (!g.members.empty() && g.members.front() == i) return "representative";
  }
  return "member";
}

Result<PickedCores> pick_cores(const Analysis& analysis, const std::string& mode_text,
                               std::size_t process_count) {
  auto mode = parse_gcore_mode(mode_text.empty() ? "one-per-group" : mode_text);
  if (!mode) return Error(Errc::usage, fmt::format("--gcore {}: not a mode", mode_text));
  PickedCores picked;
  picked.members = pick_core_members(analysis, *mode, process_count);
  for (std::size_t i : picked.members) picked.roles.emplace_back(core_role(analysis, i));
  return picked;
}

}  // namespace hangscan
