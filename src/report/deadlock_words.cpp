// A deadlock's cycle in words.
#include "report/deadlock_words.h"

#include <set>
#include <string_view>

#include <fmt/format.h>

#include "group/stack_key.h"
#include "report/member_words.h"

namespace hangscan {

namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Frames of libraries (the C library, libstdc++ and their headers, Python's own modules and
// site-packages) say how a thread waits, not where its program is.
bool library_frame(const Frame& f) {
  if (f.kind == FrameKind::python) return f.file->find("/lib/python") != std::string::npos;
  for (std::string_view dir : {"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/"}) {
    if (starts_with(f.module, dir)) return true;
  }
  return starts_with(*f.file, "/usr/include/") ||
         f.file->find("/include/c++/") != std::string::npos;
}

// "bank.cpp:14": the innermost Python frame with a line outside libraries, else such a native
// frame, else the innermost frame with a line.
std::string where_thread(const ThreadSnapshot& t) {
  const Frame* fallback = nullptr;
  for (bool python : {true, false}) {
    for (const Frame& f : t.frames) {
      if ((f.kind == FrameKind::python) != python || !f.file || !f.line) continue;
      if (!library_frame(f)) return fmt::format("{}:{}", base_name(*f.file), *f.line);
      if (!fallback) fallback = &f;
    }
  }
  return fallback ? fmt::format("{}:{}", base_name(*fallback->file), *fallback->line) : "";
}

bool writes(const ThreadSnapshot* t) {
  static const std::set<std::string> calls = {"write", "writev", "sendto", "sendmsg"};
  return t && t->syscall && calls.count(*t->syscall);
}

// "pid 4711 (python3, popen_deadlock.py:20)", or "pid 4711" when said before.
std::string process_label(const JobSnapshot& job, const Deadlock::Member& m, bool again) {
  const ProcessSnapshot& p = job.processes[m.process];
  if (again) return member_name(p);
  const ThreadSnapshot* main = main_thread(p);
  const ThreadSnapshot* t = thread_by_tid(p, m.tid);
  std::string at = t ? where_thread(*t) : "";
  std::string name = main ? main->name : "";
  if (!name.empty() && !at.empty()) name += ", ";
  name += at;
  return name.empty() ? member_name(p) : fmt::format("{} ({})", member_name(p), name);
}

std::string process_step(const JobSnapshot& job, const Deadlock& d, std::size_t k) {
  const Deadlock::Member& to = d.members[(k + 1) % d.members.size()];
  std::string target = process_label(job, to, to.process == d.members.front().process);
  const std::string& via = d.via[k]->via;
  if (starts_with(via, "child ")) return fmt::format("waits for its child {} to exit", target);
  if (starts_with(via, "pipe:[")) {
    const ProcessSnapshot& from = job.processes[d.members[k].process];
    bool writing = writes(thread_by_tid(from, d.members[k].tid));
    return fmt::format("waits for {} to {} {}", target, writing ? "read" : "write to", via);
  }
  return fmt::format("waits on {} via {}", target, via);
}

std::string thread_step(const ProcessSnapshot& p, const Deadlock& d, std::size_t k) {
  int to = d.members[(k + 1) % d.members.size()].tid;
  bool closing = (k + 1) % d.members.size() == 0;
  std::string target = closing ? std::to_string(to) : "thread " + thread_label(p, to);
  const std::string& via = d.via[k]->via;
  // "waits for a mutex held by 4712, which waits for one held by 4711"
  for (std::string_view lock : {"mutex ", "RLock "}) {
    if (!starts_with(via, lock)) continue;
    bool again = k > 0 && starts_with(d.via[k - 1]->via, lock);
    std::string what = again ? "one" : lock == "mutex " ? "a mutex" : "an RLock";
    return fmt::format("waits for {} held by {}", what, target);
  }
  return fmt::format("waits on {} over {}", target, via);
}

}  // namespace

std::string thread_label(const ProcessSnapshot& p, int tid) {
  const ThreadSnapshot* t = thread_by_tid(p, tid);
  if (!t) return std::to_string(tid);
  std::string name = t->python_name.value_or(t->name);
  std::string at = where_thread(*t);
  if (!name.empty() && !at.empty()) name += ", ";
  name += at;
  return name.empty() ? std::to_string(tid) : fmt::format("{} ({})", tid, name);
}

std::string deadlock_sentence(const JobSnapshot& job, const Deadlock& d) {
  std::string out;
  if (d.kind == Deadlock::Kind::threads) {
    const ProcessSnapshot& p = job.processes[d.members.front().process];
    out = "thread " + thread_label(p, d.members.front().tid);
    for (std::size_t k = 0; k < d.members.size(); ++k)
      out += (k ? ", which " : " ") + thread_step(p, d, k);
    if (job.processes.size() > 1) out += " (in " + member_name(p) + ")";
    return out;
  }
  out = process_label(job, d.members.front(), false);
  for (std::size_t k = 0; k < d.members.size(); ++k)
    out += (k ? ", which " : " ") + process_step(job, d, k);
  return out;
}

}  // namespace hangscan
