// SampleStacks: the recorder's stack copies turned into frames, through the capture seam's
// finish stage (capture/finish.h), the same stage a ptrace capture or a core goes through.
//
// Why its own piece: samples arrive all the time and their process may be gone by the end of
// the window, so each process's copies are finished in batches while it lives (every few seconds),
// against the live process as the ModuleSource (its maps now, re-read when a copy's pc falls
// outside them). The records' stack bytes are then dropped: only frames are kept.
// A sample of a Python process carries its thread's Python frames as raw pointers, copied by
// the recorder at the sample (bpf/py_frames.bpf.h); they are named here (code objects do not
// change) and merged with the native frames by the finish stage, as `dump --native` does.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "capture/finish.h"
#include "hangscan/model.h"
#include "python/python_reader.h"
#include "python/source_lines.h"
#include "target/target.h"
#include "unwind/symbol_cache.h"
#include "watch/process_facts.h"
#include "watch/records.h"

namespace hangscan {

// One copy's frames. Why the flag: a copy is sealed (target.h), so a stack deeper than its
// copy ends where the copy does; the report must say that its outer frames are missing,
// not absent (the finish stage's `incomplete`: unwinding stopped before the entry point).
struct SampledFrames {
  std::vector<Frame> frames;  // innermost first
  bool incomplete = false;
};

class SampleStacks {
 public:
  // Frames of each copy, in order, for the process `pid`. A copy that could not be finished
  // (the process is gone, no registers) gets no frames and a note in `notes`.
  // The copies' stack bytes are moved into the finish stage (left empty: not copied again).
  std::vector<SampledFrames> finish(int pid, const std::vector<SampledStack*>& copies,
                                    std::vector<WatchNote>& notes);
  // Where process `pid`'s Python interpreter is (found once, kept for naming the frames of its
  // samples); null when it is not a Python process or cannot be read (`why` then says so when
  // it is Python).
  const python::Located* python(int pid, std::string& why);
  // Gives each of `sleeping` (tid, its copy) its thread's Python frames, read now from the live
  // process without stopping it. Why it is exact: a thread that does not run does not change
  // its frame chain, so the caller must check afterwards that none of them ran since its copy
  // (and drop the frames of one that did). Nothing for a process that is not Python.
  void walk_sleeping_python(int pid, const std::vector<std::pair<int, SampledStack*>>& sleeping);
  // The process ended: drop what is kept for it.
  void forget(int pid) {
    targets_.erase(pid);
    unwinding_.erase(pid);
    readers_.erase(pid);
    sources_.erase(pid);
  }
  SymbolCache& symbols() { return symbols_; }

 private:
  Target* target(int pid, std::string& error);

  std::map<int, std::unique_ptr<Target>> targets_;
  // Each Python process's reader (null: looked for, not Python), kept for its code-object cache.
  std::map<int, std::unique_ptr<python::PythonReader>> readers_;
  // Each process's unwinder, kept between batches while its target (and so its maps) is.
  std::map<int, NativeUnwinding> unwinding_;
  // Each process's Python source files, read once while its target lives (see PythonCopy).
  std::map<int, std::unique_ptr<python::SourceLines>> sources_;
  SymbolCache symbols_;
};

}  // namespace hangscan
