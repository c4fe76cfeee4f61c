#include "capture/python_capture.h"

#include <algorithm>

#include <fmt/format.h>

#if __has_include("python/python_reader.h")
#include "python/merge.h"
#include "python/python_reader.h"
#include "python/source_lines.h"
#define HS_HAVE_PYTHON 1
#endif

namespace hangscan {

struct PythonCapture::State {
  Target& target;
  const CaptureOptions& options;
  std::vector<Diagnostic> diagnostics;
#ifdef HS_HAVE_PYTHON
  std::unique_ptr<python::PythonReader> reader;
  // Pages fetched while the target was stopped (see page_cache_memory.h): the walk reads
  // through it, and so does the decoding of the immutable code objects afterwards.
  std::unique_ptr<PageCacheMemory> pages;
  python::RawPythonState raw;
  bool walked = false;
  bool nonblocking = false;
  std::map<int, python::PythonThreadStack> matched;
#endif
  State(Target& t, const CaptureOptions& o) : target(t), options(o) {}
};

PythonCapture::PythonCapture(Target& target, const CaptureOptions& options)
    : state_(std::make_unique<State>(target, options)) {
#ifdef HS_HAVE_PYTHON
  if (!options.python) return;
  auto reader = python::PythonReader::locate(target, options.log);
  if (reader) {
    state_->reader = std::move(*reader);
  } else if (reader.error().code != Errc::not_found) {
    Diagnostic d;
    d.severity = Diagnostic::Severity::warning;
    d.message = reader.error().what();
    d.hint = reader.error().hint;
    d.pid = target.pid();
    state_->diagnostics.push_back(std::move(d));
  }
#endif
}

PythonCapture::~PythonCapture() = default;

bool PythonCapture::active() const {
#ifdef HS_HAVE_PYTHON
  return state_->reader != nullptr;
#else
  return false;
#endif
}

void PythonCapture::walk_frozen(std::unique_ptr<PageCacheMemory> pages) {
#ifdef HS_HAVE_PYTHON
  if (!state_->reader) return;
  state_->pages = std::move(pages);
  state_->raw = state_->reader->walk(*state_->pages, state_->options.locals);
  state_->walked = true;
#else
  (void)pages;
#endif
}

void PythonCapture::walk_nonblocking() {
#ifdef HS_HAVE_PYTHON
  walk_frozen(std::make_unique<PageCacheMemory>(state_->target.memory(), nullptr));
  state_->nonblocking = true;
#endif
}

std::vector<std::uint64_t> PythonCapture::probe_pages() {
#ifdef HS_HAVE_PYTHON
  if (!state_->reader) return {};
  PageCacheMemory probe(state_->target.memory(), nullptr);
  state_->reader->walk(probe, state_->options.locals);
  return probe.page_indices();
#else
  return {};
#endif
}

std::size_t PythonCapture::base_reads() const {
#ifdef HS_HAVE_PYTHON
  return state_->pages ? state_->pages->base_reads() : 0;
#else
  return 0;
#endif
}

void PythonCapture::decode(const std::vector<int>& tids,
                           const std::map<int, std::uint64_t>& fs_bases,
                           const std::map<int, std::pair<std::uint64_t, std::uint64_t>>& stacks) {
#ifdef HS_HAVE_PYTHON
  if (!state_->reader || !state_->walked) return;
  auto decoded = state_->reader->decode(state_->raw, *state_->pages);
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
    if (!tid && state_->nonblocking && st.native_tid) tid = st.native_tid;
    if (!tid && st.pthread_id != 0) {
      for (const auto& [t, range] : stacks) {
        if (st.pthread_id >= range.first && st.pthread_id < range.second) tid = t;
      }
    }
    if (!tid) {
      unmatched.push_back(std::move(st));
      continue;
    }
    state_->matched[*tid] = std::move(st);
  }
  // The main thread's pthread_t lies in the static TLS block, not in a stack mapping: one
  // Python thread left over when the main thread is still unmatched is the main thread.
  int main_tid = state_->target.pid();
  if (unmatched.size() == 1 && state_->matched.count(main_tid) == 0 &&
      (stacks.count(main_tid) != 0 || fs_bases.count(main_tid) != 0)) {
    state_->matched[main_tid] = std::move(unmatched.front());
  }
#else
  (void)tids;
  (void)fs_bases;
  (void)stacks;
#endif
}

bool PythonCapture::has_python_frames(int tid) const {
#ifdef HS_HAVE_PYTHON
  auto it = state_->matched.find(tid);
  return it != state_->matched.end() && !it->second.frames.empty();
#else
  (void)tid;
  return false;
#endif
}

void PythonCapture::attach(ProcessSnapshot& snap) {
  for (auto& d : state_->diagnostics) snap.diagnostics.push_back(d);
#ifdef HS_HAVE_PYTHON
  if (!state_->reader || !state_->walked) return;
  PythonInfo info;
  info.version = state_->reader->version();
  info.locator = state_->reader->locator();
  info.nonblocking = state_->nonblocking;
  info.finalizing = state_->raw.finalizing != 0;
  info.gc_collecting = state_->raw.gc_collecting;
  snap.python = info;
  if (state_->options.log != nullptr && !state_->reader->names_missing().empty())
    state_->options.log->push_back("python thread names: " + state_->reader->names_missing());
  snap.asyncio_tasks = state_->reader->asyncio_tasks(state_->raw, *state_->pages);
  if (state_->options.log != nullptr && !state_->reader->asyncio_missing().empty())
    state_->options.log->push_back("asyncio tasks: " + state_->reader->asyncio_missing());
  for (const auto& msg : state_->raw.diagnostics) {
    Diagnostic d;
    d.severity = Diagnostic::Severity::warning;
    d.message = msg;
    d.pid = snap.pid;
    snap.diagnostics.push_back(std::move(d));
  }
  python::SourceLines sources(state_->target);
  for (auto& [tid, st] : state_->matched) {
    ThreadSnapshot* t = nullptr;
    for (auto& th : snap.threads) {
      if (th.tid == tid) t = &th;
    }
    if (t == nullptr) {
      ThreadSnapshot fresh;
      fresh.tid = tid;
      state_->target.describe_thread(fresh);
      snap.threads.push_back(std::move(fresh));
      t = &snap.threads.back();
    }
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
    std::vector<Frame> py;
    py.reserve(st.frames.size());
    for (const auto& pf : st.frames) py.push_back(pf.frame);
    if (py.empty()) continue;   // no Python frames: the native stack stays
    if (state_->options.merge_native && !t->frames.empty()) {
      auto merged = python::merge_stacks(t->frames, st.frames);
      if (merged) {
        t->frames = std::move(*merged);
      } else {
        t->native_frames = std::move(t->frames);
        t->frames = std::move(py);
        t->notes.push_back("native and Python frames not merged: " + merged.error().what());
      }
    } else {
      t->frames = std::move(py);
    }
  }
  for (auto& t : snap.threads) {
    if (!t.gil) t.gil = false;
    if (!t.python_idle) t.python_idle = false;
  }
#else
  (void)snap;
#endif
}

}  // namespace hangscan
