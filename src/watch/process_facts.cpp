#include "watch/process_facts.h"

#include <array>
#include <utility>

namespace hangscan {

namespace {

constexpr std::array<std::pair<ExitKind, const char*>, 3> kExitNames{{
    {ExitKind::exited, "exited"},
    {ExitKind::killed, "killed"},
    {ExitKind::unknown, "unknown"},
}};

constexpr std::array<std::pair<WatchNoteKind, const char*>, 4> kNoteNames{{
    {WatchNoteKind::python_not_watched, "python_not_watched"},
    {WatchNoteKind::no_python_frames, "no_python_frames"},
    {WatchNoteKind::samples_before_exec, "samples_before_exec"},
    {WatchNoteKind::stacks_not_resolved, "stacks_not_resolved"},
}};

template <typename Kind, std::size_t N>
const char* name_in(const std::array<std::pair<Kind, const char*>, N>& names, Kind k) {
  for (const auto& [kind, name] : names)
    if (kind == k) return name;
  return names[0].second;
}

template <typename Kind, std::size_t N>
std::optional<Kind> kind_in(const std::array<std::pair<Kind, const char*>, N>& names,
                            const std::string& name) {
  for (const auto& [kind, n] : names)
    if (name == n) return kind;
  return std::nullopt;
}

}  // namespace

ProcessExit process_exit_of(int exit_code) {
  ProcessExit e;
  if (exit_code < 0) return e;
  int sig = exit_code & 0x7f;
  if (sig == 0) {
    e.kind = ExitKind::exited;
    e.status = (exit_code >> 8) & 0xff;
    return e;
  }
  e.kind = ExitKind::killed;
  e.signal = sig;
  e.core_dumped = (exit_code & 0x80) != 0;
  return e;
}

const char* exit_kind_name(ExitKind k) { return name_in(kExitNames, k); }

std::optional<ExitKind> exit_kind_of(const std::string& name) { return kind_in(kExitNames, name); }

const char* note_kind_name(WatchNoteKind k) { return name_in(kNoteNames, k); }

std::optional<WatchNoteKind> note_kind_of(const std::string& name) {
  return kind_in(kNoteNames, name);
}

nlohmann::json exit_to_json(const ProcessExit& e) {
  nlohmann::json j{{"kind", exit_kind_name(e.kind)}};
  if (e.kind == ExitKind::exited) j["status"] = e.status;
  if (e.kind == ExitKind::killed) {
    j["signal"] = e.signal;
    j["core_dumped"] = e.core_dumped;
    j["oom_victim"] = e.oom_victim;
  }
  return j;
}

std::optional<ProcessExit> exit_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string()) return std::nullopt;
  auto kind = exit_kind_of(j["kind"].get<std::string>());
  if (!kind) return std::nullopt;
  ProcessExit e;
  e.kind = *kind;
  auto int_of = [&](const char* key) {
    return j.contains(key) && j[key].is_number_integer() ? j[key].get<int>() : 0;
  };
  e.status = int_of("status");
  e.signal = int_of("signal");
  auto flag_of = [&](const char* key) {
    return j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
  };
  e.core_dumped = flag_of("core_dumped");
  e.oom_victim = flag_of("oom_victim");
  return e;
}

nlohmann::json note_to_json(const WatchNote& n) {
  nlohmann::json j{{"kind", note_kind_name(n.kind)}};
  switch (n.kind) {
    case WatchNoteKind::samples_before_exec:
      j["count"] = n.count;
      j["t_s"] = n.t_s;
      break;
    case WatchNoteKind::stacks_not_resolved:
      j["pid"] = n.pid;
      j["count"] = n.count;
      j["detail"] = n.detail;
      break;
    case WatchNoteKind::python_not_watched:
    case WatchNoteKind::no_python_frames:
      j["detail"] = n.detail;
      break;
  }
  return j;
}

}  // namespace hangscan
