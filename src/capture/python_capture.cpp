#include "capture/python_capture.h"

#include <algorithm>

#include <fmt/format.h>

#include "python/launcher_children.h"
#include "python/merge.h"
#include "python/source_lines.h"
#include "util/diagnostic.h"

namespace hangscan {

std::shared_ptr<PythonCopy> locate_python(Target& target, const CaptureOptions& options) {
  auto py = std::make_shared<PythonCopy>();
  if (!options.python) return py;
  auto reader = python::PythonReader::locate(target, options.log);
  if (reader) {
    py->reader = std::move(*reader);
  } else if (reader.error().code != Errc::not_found) {
    py->diagnostics.push_back(make_diagnostic(Diagnostic::Severity::warning, reader.error().what(),
                                              reader.error().hint, target.pid()));
  }
  return py;
}

std::vector<std::uint64_t> probe_python_pages(PythonCopy& py, Target& target, bool locals) {
  if (!py.reader) return {};
  PageCacheMemory probe(target.memory(), nullptr);
  py.reader->walk(probe, locals);
  return probe.page_indices();
}

void walk_python_frozen(PythonCopy& py, std::unique_ptr<PageCacheMemory> pages, bool locals) {
  if (!py.reader) return;
  py.pages = std::move(pages);
  py.raw = py.reader->walk(*py.pages, locals);
  py.walked = true;
}

void walk_python_nonblocking(PythonCopy& py, Target& target, bool locals,
                             const std::map<int, ThreadSnapshot>& described) {
  if (!py.reader) return;
  walk_python_frozen(py, std::make_unique<PageCacheMemory>(target.memory(), nullptr), locals);
  py.nonblocking = true;
  for (const auto& rt : py.raw.threads) {
    if (!rt.native_tid || described.count(*rt.native_tid) != 0) continue;
    ThreadSnapshot fresh;
    fresh.tid = *rt.native_tid;
    target.describe_thread(fresh);
    py.late_threads[fresh.tid] = std::move(fresh);
  }
}

std::size_t python_base_reads(const PythonCopy& py) {
  return py.pages ? py.pages->base_reads() : 0;
}

PythonByThread decode_python(PythonCopy& py, ModuleSource& source, const std::vector<int>& tids,
                             const std::map<int, std::uint64_t>& fs_bases,
                             const std::map<int, std::pair<std::uint64_t, std::uint64_t>>& stacks) {
  PythonByThread matched;
  if (!py.reader || !py.walked) return matched;
  if (!py.pages) py.pages = std::make_unique<PageCacheMemory>(source.memory(), nullptr);
  py.pages->rebase(source.memory());
  auto decoded = py.reader->decode(py.raw, *py.pages);
  std::vector<python::PythonThreadStack> unmatched;
  // Match Python thread states to native threads: native_tid when the version records it,
  // else pthread_t == the thread's fs_base (x86-64 glibc).
  for (auto& st : decoded) {
    std::optional<int> tid;
    if (st.native_tid && std::find(tids.begin(), tids.end(), *st.native_tid) != tids.end()) {
      tid = st.native_tid;
    } else if (st.pthread_id != 0) {
      for (const auto& [t, fs] : fs_bases) {
        if (fs == st.pthread_id) tid = t;
      }
    }
    if (!tid && py.nonblocking && st.native_tid) tid = st.native_tid;
    if (!tid && st.pthread_id != 0) {
      for (const auto& [t, range] : stacks) {
        if (st.pthread_id >= range.first && st.pthread_id < range.second) tid = t;
      }
    }
    if (!tid) {
      unmatched.push_back(std::move(st));
      continue;
    }
    matched[*tid] = std::move(st);
  }
  // The main thread's pthread_t lies in the static TLS block, not in a stack mapping: one
  // Python thread left over when the main thread is still unmatched is the main thread.
  int main_tid = source.pid();
  if (unmatched.size() == 1 && matched.count(main_tid) == 0 &&
      (stacks.count(main_tid) != 0 || fs_bases.count(main_tid) != 0)) {
    matched[main_tid] = std::move(unmatched.front());
  }
  return matched;
}

bool has_python_frames(const PythonByThread& decoded, int tid) {
  auto it = decoded.find(tid);
  return it != decoded.end() && !it->second.frames.empty();
}

namespace {

// One note per source file whose text is withheld: the report says why its lines show no text.
void note_withheld(python::SourceLines& sources, ProcessSnapshot& snap) {
  for (auto& w : sources.take_withheld()) {
    using Why = python::WithheldSource::Why;
    std::string hint =
        w.why == Why::changed ? "the line number is the running code's; the file on disk changed "
                                "since, so its text may not be what runs"
        : w.why == Why::slow  ? "the file system that holds it did not answer (a stuck network "
                                "file system?)"
                              : "hangscan shows a source file only as the process's own user "
                                "could read it (docs/security.md)";
    snap.diagnostics.push_back(
        make_diagnostic(Diagnostic::Severity::info,
                        fmt::format("source file {}: {}; its text is not shown", w.file, w.reason),
                        std::move(hint), snap.pid));
  }
}

// The snapshot's thread `tid`, added (described when the walk saw it start) when missing.
ThreadSnapshot& thread_of(PythonCopy& py, int tid, ProcessSnapshot& snap) {
  for (auto& th : snap.threads) {
    if (th.tid == tid) return th;
  }
  ThreadSnapshot fresh;
  fresh.tid = tid;
  if (auto late = py.late_threads.find(tid); late != py.late_threads.end()) fresh = late->second;
  snap.threads.push_back(std::move(fresh));
  return snap.threads.back();
}

// A frame of torch's elastic agent (torchrun) or of its process context: its own list of
// workers may be read. (A worker's frames are elsewhere: elastic's @record wrapper is in
// multiprocessing/errors.)
bool runs_torchrun_agent(const PythonByThread& decoded) {
  for (const auto& [tid, st] : decoded) {
    for (const auto& pf : st.frames) {
      if (!pf.frame.file) continue;
      const std::string& f = *pf.frame.file;
      if (f.find("/torch/distributed/elastic/multiprocessing/api.py") != std::string::npos ||
          f.find("/torch/distributed/elastic/agent/server/") != std::string::npos)
        return true;
    }
  }
  return false;
}

}  // namespace

void attach_python(PythonCopy& py, PythonByThread& decoded, ModuleSource& source,
                   const CaptureOptions& options, ProcessSnapshot& snap) {
  for (auto& d : py.diagnostics) snap.diagnostics.push_back(d);
  if (!py.reader || !py.walked) return;
  PythonInfo info;
  info.version = py.reader->version();
  info.locator = py.reader->locator();
  info.nonblocking = py.nonblocking;
  info.finalizing = py.raw.finalizing != 0;
  info.gc_collecting = py.raw.gc_collecting;
  snap.python = info;
  if (options.log != nullptr && !py.reader->names_missing().empty())
    options.log->push_back("python thread names: " + py.reader->names_missing());
  snap.asyncio_tasks = py.reader->asyncio_tasks(py.raw, *py.pages);
  if (runs_torchrun_agent(decoded)) {
    // Frames a quiet source took carry no frame addresses: the list is read through a walk of
    // the chains in memory (the frozen pages, and the frames' pages as they are now).
    python::RawPythonState chains = py.reader->walk(*py.pages, false);
    snap.worker_local_ranks = python::launcher_children(*py.reader, chains, *py.pages);
  }
  if (options.log != nullptr && !py.reader->asyncio_missing().empty())
    options.log->push_back("asyncio tasks: " + py.reader->asyncio_missing());
  for (const auto& msg : py.raw.diagnostics) {
    snap.diagnostics.push_back(make_diagnostic(Diagnostic::Severity::warning, msg, {}, snap.pid));
  }
  std::optional<python::SourceLines> own;
  python::SourceLines& sources = py.sources ? *py.sources : own.emplace(source);
  for (auto& [tid, st] : decoded) {
    ThreadSnapshot* t = &thread_of(py, tid, snap);
    t->gil = st.gil;
    t->python_idle = st.idle;
    t->python_name = st.name;
    t->gc_collecting = st.gc_collecting;
    t->finalizing = st.finalizing;
    for (auto& n : st.notes) t->notes.push_back(n);
    for (auto& pf : st.frames) {
      if (pf.frame.column && pf.frame.file && pf.frame.line)
        pf.frame.source = sources.line(*pf.frame.file, *pf.frame.line);
    }
    std::vector<Frame> frames;
    frames.reserve(st.frames.size());
    for (const auto& pf : st.frames) frames.push_back(pf.frame);
    if (frames.empty()) continue;  // no Python frames: the native stack stays
    if (options.merge_native && !t->frames.empty()) {
      auto merged = options.merge_cut_native && t->incomplete
                        ? python::merge_cut_stacks(t->frames, st.frames)
                        : python::merge_stacks(t->frames, st.frames);
      if (merged) {
        t->frames = std::move(*merged);
      } else {
        t->native_frames = std::move(t->frames);
        t->frames = std::move(frames);
        t->notes.push_back("native and Python frames not merged: " + merged.error().what());
      }
    } else {
      t->frames = std::move(frames);
    }
  }
  note_withheld(sources, snap);
  for (auto& t : snap.threads) {
    if (!t.gil) t.gil = false;
    if (!t.python_idle) t.python_idle = false;
  }
}

}  // namespace hangscan
