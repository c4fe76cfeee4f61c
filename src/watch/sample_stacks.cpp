#include "watch/sample_stacks.h"

#include <fmt/format.h>

#include "capture/python_capture.h"
#include "python/merge.h"
#include "target/live_target.h"

namespace hangscan {

namespace {

// finish_process keys threads by tid; samples of one thread are many, so each copy gets an id
// of its own above any real tid (Linux pids end at 2^22).
constexpr int kCopyIdBase = 1 << 23;

bool covers(const Target& target, std::uint64_t pc) {
  for (const auto& m : target.mappings()) {
    if (m.contains(pc)) return true;
  }
  return false;
}

}  // namespace

Target* SampleStacks::target(int pid, std::string& error) {
  auto it = targets_.find(pid);
  if (it != targets_.end()) return it->second.get();
  // Read-only: the finish stage reads modules (and the vDSO) here, never the stacks around
  // the copies (sealed: they have moved on); nothing is stopped.
  auto t = open_live_target(pid, true);
  if (!t) {
    error = t.error().what();
    return nullptr;
  }
  unwinding_.erase(pid);  // made again over the new maps
  sources_.erase(pid);    // they read through the target
  return targets_.insert_or_assign(pid, std::move(*t)).first->second.get();
}

const python::Located* SampleStacks::python(int pid, std::string& why) {
  auto it = readers_.find(pid);
  if (it == readers_.end()) {
    std::unique_ptr<python::PythonReader> reader;
    if (Target* t = target(pid, why)) {
      auto r = python::PythonReader::locate(*t, nullptr);
      if (r) reader = std::move(*r);
      else if (r.error().code != Errc::not_found) why = r.error().what();
    }
    it = readers_.emplace(pid, std::move(reader)).first;
  }
  return it->second ? &it->second->located() : nullptr;
}

void SampleStacks::walk_sleeping_python(
    int pid, const std::vector<std::pair<int, SampledStack*>>& sleeping) {
  auto reader = readers_.find(pid);
  if (sleeping.empty() || reader == readers_.end() || !reader->second) return;
  std::string error;
  Target* live = target(pid, error);
  if (live == nullptr) return;
  python::RawPythonState walked = reader->second->walk(live->memory(), false);
  for (const auto& [tid, copy] : sleeping)
    copy->python = python::python_thread_of(walked, tid, copy->regs.fs_base());
}

std::vector<SampledFrames> SampleStacks::finish(int pid, const std::vector<SampledStack*>& copies,
                                                std::vector<WatchNote>& notes) {
  std::vector<SampledFrames> out(copies.size());
  if (copies.empty()) return out;
  if (auto it = targets_.find(pid); it != targets_.end()) {
    bool stale = false;
    for (const auto* c : copies) stale = stale || !covers(*it->second, c->regs.pc());
    if (stale) targets_.erase(it);
  }
  std::string error;
  Target* live = target(pid, error);
  if (live == nullptr) {
    notes.push_back({.kind = WatchNoteKind::stacks_not_resolved,
                     .count = copies.size(),
                     .pid = pid,
                     .detail = error});
    return out;
  }
  ProcessCopy copy;
  copy.pid = pid;
  copy.what = fmt::format("pid {}", pid);
  // The Python frames the samples copied, each matched to its copy by the copy's own id.
  std::shared_ptr<PythonCopy> py;
  auto reader = readers_.find(pid);
  for (std::size_t i = 0; i < copies.size(); ++i) {
    ThreadCopy& tc = copy.threads.emplace_back();
    tc.tid = kCopyIdBase + static_cast<int>(i);
    tc.regs = copies[i]->regs;
    tc.stack = std::move(copies[i]->stack);
    if (!copies[i]->python || reader == readers_.end() || !reader->second) continue;
    if (!py) py = std::make_shared<PythonCopy>();
    python::RawPythonThread& th = py->raw.threads.emplace_back(std::move(*copies[i]->python));
    th.native_tid = tc.tid;
  }
  if (py) {
    py->reader = std::move(reader->second);  // lent for the decoding (its code cache stays)
    std::unique_ptr<python::SourceLines>& kept = sources_[pid];
    if (!kept) kept = std::make_unique<python::SourceLines>(*live);
    py->sources = std::move(kept);  // lent too: each file read once while the target lives
    py->walked = true;
    copy.python = py;
  }
  CaptureOptions options;
  options.python = false;
  options.kernel_stacks = false;
  options.merge_native = true;
  options.merge_cut_native = true;
  ProcessSnapshot snap =
      finish_process(std::move(copy), *live, options, symbols_, &unwinding_[pid]);
  if (py) {
    reader->second = std::move(py->reader);
    sources_[pid] = std::move(py->sources);
  }
  for (auto& t : snap.threads) {
    std::size_t i = static_cast<std::size_t>(t.tid - kCopyIdBase);
    if (t.tid >= kCopyIdBase && i < out.size()) out[i] = {std::move(t.frames), t.incomplete};
  }
  return out;
}

}  // namespace hangscan
