#include "watch/sample_stacks.h"

#include <fmt/format.h>

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

std::vector<SampledFrames> SampleStacks::finish(int pid, const std::vector<SampledStack*>& copies,
                                                std::vector<std::string>& notes) {
  std::vector<SampledFrames> out(copies.size());
  if (copies.empty()) return out;
  auto it = targets_.find(pid);
  bool stale = it == targets_.end();
  if (!stale) {
    for (const auto* c : copies) stale = stale || !covers(*it->second, c->regs.pc());
  }
  if (stale) {
    // Read-only: the finish stage reads modules (and the vDSO) here, never the stacks around
    // the copies (sealed: they have moved on); nothing is stopped.
    auto t = open_live_target(pid, true);
    if (!t) {
      notes.push_back(fmt::format("pid {}: {} sampled stacks not resolved: {}", pid, copies.size(),
                                  t.error().what()));
      return out;
    }
    it = targets_.insert_or_assign(pid, std::move(*t)).first;
    unwinding_.erase(pid);  // made again over the new maps
  }
  ProcessCopy copy;
  copy.pid = pid;
  copy.what = fmt::format("pid {}", pid);
  for (std::size_t i = 0; i < copies.size(); ++i) {
    ThreadCopy& tc = copy.threads.emplace_back();
    tc.tid = kCopyIdBase + static_cast<int>(i);
    tc.regs = copies[i]->regs;
    tc.stack = std::move(copies[i]->stack);
  }
  CaptureOptions options;
  options.python = false;
  options.kernel_stacks = false;
  ProcessSnapshot snap =
      finish_process(std::move(copy), *it->second, options, symbols_, &unwinding_[pid]);
  for (auto& t : snap.threads) {
    std::size_t i = static_cast<std::size_t>(t.tid - kCopyIdBase);
    if (t.tid >= kCopyIdBase && i < out.size()) out[i] = {std::move(t.frames), t.incomplete};
  }
  return out;
}

}  // namespace hangscan
