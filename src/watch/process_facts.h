// How a watched process ended and what went wrong capturing it, as data.
//
// Why: the engine (watcher.cpp, sample_stacks.cpp) knows these as facts (an exit code, a count
// of samples, the time of an exec); the writers make the sentences (exit_words(), note_words():
// watch/watch_words.h), so a new output reads the figures, not the prose. The JSON carries both:
// the words the report always had, and these beside them (`exit_data`, `note_data`).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace hangscan {

enum class ExitKind {
  exited,   // it returned from main or called exit(): ProcessExit::status
  killed,   // a signal ended it: ProcessExit::signal, core_dumped
  unknown,  // the ptrace fallback saw it vanish: its status is not known without eBPF
};

// How a process ended within the window, as far as the recorder knows.
struct ProcessExit {
  ExitKind kind = ExitKind::unknown;
  int status = 0;  // exited: 0-255
  int signal = 0;  // killed: the signal's number
  bool core_dumped = false;
  // The OOM killer chose it before it ended (its oom event, in the timeline too). Its words stay
  // "killed by SIGKILL": the timeline's sentence says who chose it.
  bool oom_victim = false;
};

// The kernel's exit code (task->exit_code: status << 8, or the signal | 0x80 with a core) as
// a ProcessExit; -1 (what the ptrace fallback records): unknown.
ProcessExit process_exit_of(int exit_code);

enum class WatchNoteKind {
  python_not_watched,   // the recorder could not copy its Python frames (detail: why)
  no_python_frames,     // its Python runtime was not found (detail: why)
  samples_before_exec,  // count samples from before its exec at t_s could not be resolved
  stacks_not_resolved,  // count sampled stacks of pid could not be resolved (detail: why)
};

// Something that went wrong capturing one process (ProcessWatch::notes).
struct WatchNote {
  WatchNoteKind kind = WatchNoteKind::python_not_watched;
  std::size_t count = 0;  // samples_before_exec, stacks_not_resolved
  double t_s = 0;         // samples_before_exec: the exec, seconds from the window's start
  int pid = 0;            // stacks_not_resolved
  std::string detail;     // the lower layer's reason, in its own words
};

// The kinds' names in the JSON, and back (nothing for a name this version does not know).
const char* exit_kind_name(ExitKind k);
std::optional<ExitKind> exit_kind_of(const std::string& name);
const char* note_kind_name(WatchNoteKind k);
std::optional<WatchNoteKind> note_kind_of(const std::string& name);

// As data in the watch JSON (docs/output-schema.md, "watch"): the kind and its figures only.
nlohmann::json exit_to_json(const ProcessExit& e);
nlohmann::json note_to_json(const WatchNote& n);

// An exit read back leniently (a merged document's behaviour, its node's already checked:
// watch/node_watch_reader.h): nothing when the kind is not known; odd figures are left at 0.
std::optional<ProcessExit> exit_from_json(const nlohmann::json& j);

}  // namespace hangscan
