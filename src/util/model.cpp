// Names of model enums, shared by every writer and the JSON reader.
#include "hangscan/model.h"

namespace hangscan {

const char* frame_kind_name(FrameKind kind) {
  switch (kind) {
    case FrameKind::native:
      return "native";
    case FrameKind::inline_frame:
      return "inline";
    case FrameKind::python:
      return "python";
    case FrameKind::kernel:
      return "kernel";
  }
  return "native";
}

const char* severity_name(Diagnostic::Severity s) {
  switch (s) {
    case Diagnostic::Severity::info:
      return "info";
    case Diagnostic::Severity::warning:
      return "warning";
    case Diagnostic::Severity::error:
      return "error";
  }
  return "warning";
}

bool is_main_thread(const ProcessSnapshot& p, const ThreadSnapshot& t) {
  return t.is_main || t.tid == p.pid;
}

const ThreadSnapshot* main_thread(const ProcessSnapshot& p) {
  for (const ThreadSnapshot& t : p.threads) {
    if (is_main_thread(p, t)) return &t;
  }
  return nullptr;
}

const ThreadSnapshot* main_or_first_thread(const ProcessSnapshot& p) {
  const ThreadSnapshot* m = main_thread(p);
  return m || p.threads.empty() ? m : &p.threads.front();
}

const ThreadSnapshot* thread_by_tid(const ProcessSnapshot& p, int tid) {
  for (const ThreadSnapshot& t : p.threads) {
    if (t.tid == tid) return &t;
  }
  return nullptr;
}

std::vector<const Frame*> python_frames(const ThreadSnapshot& t) {
  std::vector<const Frame*> out;
  for (const Frame& f : t.frames) {
    if (f.kind == FrameKind::python) out.push_back(&f);
  }
  return out;
}

}  // namespace hangscan
