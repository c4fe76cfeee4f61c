// Merging a thread's native frames with its Python frames into one true call order.
//
// Why: a hung rank is understood from both halves: `all_reduce (distributed_c10d.py:1541)`
// and the `c10d::Work::wait` under it. Each native eval-loop frame is replaced by the Python
// frames it was running (several per call on 3.11+, grouped by entry frames), and C functions
// called from Python stay between the Python frames that called them. When the two stacks do
// not line up the merge refuses with the reason, and the caller shows both.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "hangscan/model.h"
#include "hangscan/result.h"
#include "python/python_reader.h"

namespace hangscan::python {

// True for the native function that runs one eval-loop call (_PyEval_EvalFrameDefault, or
// PyEval_EvalFrameEx where no _PyEval_EvalFrameDefault frame is present).
bool is_eval_frame(std::string_view function);

// Python frames (innermost first) cut into eval-loop calls: a call ends at an entry frame.
std::vector<std::vector<PythonFrame>> eval_groups(const std::vector<PythonFrame>& python);

// Interleaves; Error (with the reason) when the counts of eval-loop calls do not match.
Result<std::vector<Frame>> merge_stacks(const std::vector<Frame>& native,
                                        const std::vector<PythonFrame>& python);

// As merge_stacks, for a native stack cut short (it ends before the thread's entry point: a
// sampled copy ended, unwind information is missing). Its eval-loop frames are the innermost
// calls', so those are interleaved; the outer calls' Python frames, which the native stack
// does not reach, follow its last frame after one frame named kNativeGap. Why: a sampled
// stack deeper than its copy keeps its whole Python chain (copied apart) and its innermost
// native frames, and says where native frames are missing. Error when the native stack holds
// more eval-loop frames than there are Python calls.
inline constexpr std::string_view kNativeGap =
    "[native frames not recorded: the stack is cut here]";
Result<std::vector<Frame>> merge_cut_stacks(const std::vector<Frame>& native,
                                            const std::vector<PythonFrame>& python);

// The Python thread running on native thread `tid`: by native_tid when the version records
// it, else by pthread_id == the thread's fs_base (x86-64 glibc: pthread_self() is the TCB).
// A template over the walk's raw threads (RawPythonThread: the ptrace fallback's samples) and
// the decoded ones (PythonThreadStack): both say native_tid and pthread_id.
template <typename Thread>
std::optional<std::size_t> find_python_thread(const std::vector<Thread>& stacks, int tid,
                                              std::optional<std::uint64_t> fs_base) {
  for (std::size_t i = 0; i < stacks.size(); ++i)
    if (stacks[i].native_tid && *stacks[i].native_tid == tid) return i;
  if (!fs_base || *fs_base == 0) return std::nullopt;
  for (std::size_t i = 0; i < stacks.size(); ++i)
    if (!stacks[i].native_tid && stacks[i].pthread_id == *fs_base) return i;
  return std::nullopt;
}

// A copy of the walked thread of native thread `tid`, with its native id set (the finish
// stage matches a copy's Python frames to its native stack by it). Why: a recorder that walks
// a whole process once gives each sampled or sleeping thread its own chain.
inline std::optional<RawPythonThread> python_thread_of(const RawPythonState& walked, int tid,
                                                       std::optional<std::uint64_t> fs_base) {
  auto i = find_python_thread(walked.threads, tid, fs_base);
  if (!i) return std::nullopt;
  RawPythonThread copy = walked.threads[*i];
  copy.native_tid = tid;
  return copy;
}

}  // namespace hangscan::python
