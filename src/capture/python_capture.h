// PythonCapture: the Python half of one capture, split around the freeze.
//
// Why: capture_process() must read Python frame pointers while the target is stopped and
// decode code objects after it runs again; this class holds the state between the two
// steps and attaches the result to the snapshot's threads (Python-only frames, or merged
// with the native ones for --native).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "capture/capture.h"
#include "hangscan/model.h"
#include "target/frozen_memory.h"
#include "target/target.h"

namespace hangscan {

class PythonCapture {
 public:
  // Locates the interpreter (before any freeze). A target that is not Python is not an error.
  PythonCapture(Target& target, const CaptureOptions& options);
  ~PythonCapture();
  PythonCapture(const PythonCapture&) = delete;
  PythonCapture& operator=(const PythonCapture&) = delete;

  bool active() const;
  // Before the freeze: walks the frame chain without stopping, to learn which pages the frozen
  // walk will read; they are then fetched in one batch while stopped (and are already in the
  // target's page tables, so that batch does not fault them in). Empty when not Python.
  std::vector<std::uint64_t> probe_pages();
  // While the target is stopped: reads the frame chain as raw pointers, through `pages` (which
  // serves the stack copies already made and fetches a page at a time; it is kept for decode).
  void walk_frozen(std::unique_ptr<PageCacheMemory> pages);
  // --nonblocking: the same without a stop (possibly inconsistent).
  void walk_nonblocking();
  // Reads of the target's memory the walk made (for --verbose).
  std::size_t base_reads() const;
  // After resume: decodes code objects and matches Python threads to native ones. `fs_bases`
  // maps tid to the thread's fs_base register (its pthread_t), for versions without native ids.
  // `stacks` maps tid to the [start, end) of the mapping holding its stack pointer: glibc
  // keeps a thread's pthread_t at the top of that mapping, which matches Python threads to
  // native ones without registers (--nonblocking on versions without native ids).
  void decode(const std::vector<int>& tids, const std::map<int, std::uint64_t>& fs_bases,
              const std::map<int, std::pair<std::uint64_t, std::uint64_t>>& stacks);
  // True when the thread runs Python code (so Python-only output needs no native symbols).
  bool has_python_frames(int tid) const;
  // Attaches the decoded frames to the snapshot's threads (merged with native for --native).
  void attach(ProcessSnapshot& snap);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace hangscan
