// The Python half of a capture, split around the freeze: PythonCopy and its two steps.
//
// Why: the frame chains must be read while the target is stopped, as raw pointers, and the
// code objects (immutable) decoded after it runs again. PythonCopy is what crosses from one
// half to the other (capture/finish.h): where the interpreter is, the raw walk, and the pages
// it read, which then serve the decoding too. The decoded frames are attached to the
// snapshot's threads (Python-only frames, or merged with the native ones for --native).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "capture/capture.h"
#include "capture/finish.h"
#include "hangscan/model.h"
#include "python/python_reader.h"
#include "python/source_lines.h"
#include "target/frozen_memory.h"
#include "target/module_source.h"
#include "target/target.h"

namespace hangscan {

struct PythonCopy {
  // Prefaulted memory of the freeze: `pages` and the stack copies they serve live in it.
  std::unique_ptr<FreezeBuffer> buffer;
  // The pages the walk read (and the stack copies, for 3.11's _PyCFrame on the C stack);
  // finish_process() rebases them on its ModuleSource's memory for the pages decoding adds.
  std::unique_ptr<PageCacheMemory> pages;
  std::unique_ptr<python::PythonReader> reader;  // null: not Python (or not readable)
  python::RawPythonState raw;
  bool walked = false;
  bool nonblocking = false;             // walked without a stop (possibly inconsistent)
  std::vector<Diagnostic> diagnostics;  // why the interpreter could not be read
  // --nonblocking: descriptions of threads the walk names (native ids) that were not among the
  // threads described before it (they started in between).
  std::map<int, ThreadSnapshot> late_threads;
  // The source files read for the frames' lines. Why lent: a caller that finishes the same
  // process again and again (the recorder, every few seconds) reads each file once, not once a
  // batch. Must read through the ModuleSource given to finish_process; null: read for this
  // capture only.
  std::unique_ptr<python::SourceLines> sources;
};

// --- acquire (capture/acquire.cpp) ---

// Locates the interpreter (before any freeze). A target that is not Python is not an error.
std::shared_ptr<PythonCopy> locate_python(Target& target, const CaptureOptions& options);
// Before the freeze: walks the frame chain without stopping, to learn which pages the frozen
// walk will read; they are then fetched in one batch while stopped (and are already in the
// target's page tables, so that batch does not fault them in). Empty when not Python.
std::vector<std::uint64_t> probe_python_pages(PythonCopy& py, Target& target, bool locals);
// While the target is stopped: reads the frame chain as raw pointers, through `pages` (which
// serves the stack copies already made and fetches a page at a time; it is kept for decoding).
void walk_python_frozen(PythonCopy& py, std::unique_ptr<PageCacheMemory> pages, bool locals);
// --nonblocking: the same without a stop; describes the threads it finds that `described`
// lacks.
void walk_python_nonblocking(PythonCopy& py, Target& target, bool locals,
                             const std::map<int, ThreadSnapshot>& described);
// Reads of the target's memory the walk made (for --verbose).
std::size_t python_base_reads(const PythonCopy& py);

// --- finish (capture/finish.cpp) ---

// Decoded Python threads by native tid.
using PythonByThread = std::map<int, python::PythonThreadStack>;

// Decodes code objects and matches Python threads to native ones. `fs_bases` maps tid to the
// thread's fs_base register (its pthread_t), for versions without native ids. `stacks` maps
// tid to the [start, end) of the mapping holding its stack pointer: glibc keeps a thread's
// pthread_t at the top of that mapping, which matches Python threads to native ones without
// registers (--nonblocking on versions without native ids).
PythonByThread decode_python(PythonCopy& py, ModuleSource& source, const std::vector<int>& tids,
                             const std::map<int, std::uint64_t>& fs_bases,
                             const std::map<int, std::pair<std::uint64_t, std::uint64_t>>& stacks);
// True when the thread runs Python code (so Python-only output needs no native symbols).
bool has_python_frames(const PythonByThread& decoded, int tid);
// Attaches the decoded frames to the snapshot's threads (merged with native for --native),
// and the Python diagnostics and facts to the snapshot.
void attach_python(PythonCopy& py, PythonByThread& decoded, ModuleSource& source,
                   const CaptureOptions& options, ProcessSnapshot& snap);

}  // namespace hangscan
