#include "python/merge.h"

#include <fmt/format.h>

namespace hangscan::python {
namespace {

constexpr std::string_view kEvalDefault = "_PyEval_EvalFrameDefault";
constexpr std::string_view kEvalEx = "PyEval_EvalFrameEx";

// "name" or a compiler clone of it ("name.cold", "name.constprop.0").
bool same_function(std::string_view function, std::string_view name) {
  if (function.substr(0, name.size()) != name) return false;
  return function.size() == name.size() || function[name.size()] == '.';
}

bool counts_as_eval(const Frame& f, bool has_default) {
  if (f.kind != FrameKind::native) return false;  // inline frames share the physical frame
  return same_function(f.function, kEvalDefault) ||
         (!has_default && same_function(f.function, kEvalEx));
}

}  // namespace

bool is_eval_frame(std::string_view function) {
  return same_function(function, kEvalDefault) || same_function(function, kEvalEx);
}

std::vector<std::vector<PythonFrame>> eval_groups(const std::vector<PythonFrame>& python) {
  std::vector<std::vector<PythonFrame>> groups;
  std::vector<PythonFrame> current;
  for (const auto& f : python) {
    current.push_back(f);
    if (f.entry) {
      groups.push_back(std::move(current));
      current.clear();
    }
  }
  // Frames below the last entry (a cut chain) still belong to one outermost call.
  if (!current.empty()) groups.push_back(std::move(current));
  return groups;
}

namespace {

// Interleaves: the native frame at each index of `evals` (innermost first) becomes its group.
std::vector<Frame> interleave(const std::vector<Frame>& native,
                              const std::vector<std::vector<PythonFrame>>& groups,
                              const std::vector<std::size_t>& evals) {
  std::vector<Frame> out;
  std::size_t g = 0;
  for (std::size_t i = 0; i < native.size(); ++i) {
    if (g < evals.size() && evals[g] == i) {
      for (const auto& p : groups[g]) out.push_back(p.frame);
      ++g;
    } else {
      out.push_back(native[i]);
    }
  }
  return out;
}

// The eval-loop frames found by address: the physical frame whose stack range [sp, caller's
// sp) holds the group's marker. Empty when a marker is missing or not inside one frame each,
// in call order.
std::vector<std::size_t> evals_by_marker(const std::vector<Frame>& native,
                                         const std::vector<std::vector<PythonFrame>>& groups) {
  std::vector<std::size_t> physical;
  for (std::size_t i = 0; i < native.size(); ++i)
    if (native[i].kind == FrameKind::native) physical.push_back(i);
  std::vector<std::size_t> evals;
  std::size_t from = 0;  // groups run innermost first, so their frames do too
  for (const auto& group : groups) {
    std::uint64_t marker = group.back().eval_marker;
    if (marker == 0) return {};
    std::optional<std::size_t> found;
    for (std::size_t j = from; j + 1 < physical.size() && !found; ++j) {
      std::uint64_t lo = native[physical[j]].sp;
      std::uint64_t hi = native[physical[j + 1]].sp;
      if (lo != 0 && lo <= marker && marker < hi) found = j;
    }
    if (!found) return {};
    evals.push_back(physical[*found]);
    from = *found + 1;
  }
  return evals;
}

// The eval-loop frames found by name: _PyEval_EvalFrameDefault's, or PyEval_EvalFrameEx's
// where there is none of the former (older versions).
std::vector<std::size_t> evals_by_name(const std::vector<Frame>& native) {
  bool has_default = false;
  for (const auto& f : native)
    if (f.kind == FrameKind::native && same_function(f.function, kEvalDefault)) has_default = true;
  std::vector<std::size_t> evals;
  for (std::size_t i = 0; i < native.size(); ++i)
    if (counts_as_eval(native[i], has_default)) evals.push_back(i);
  return evals;
}

}  // namespace

Result<std::vector<Frame>> merge_stacks(const std::vector<Frame>& native,
                                        const std::vector<PythonFrame>& python) {
  auto groups = eval_groups(python);
  if (auto by_marker = evals_by_marker(native, groups); !by_marker.empty())
    return interleave(native, groups, by_marker);
  std::vector<std::size_t> evals = evals_by_name(native);
  if (evals.size() != groups.size()) {
    return Error(Errc::bad_data,
                 fmt::format("cannot merge: {} Python eval-loop calls ({} Python frames) but {} "
                             "native eval-loop frames",
                             groups.size(), python.size(), evals.size()));
  }
  return interleave(native, groups, evals);
}

Result<std::vector<Frame>> merge_cut_stacks(const std::vector<Frame>& native,
                                            const std::vector<PythonFrame>& python) {
  auto groups = eval_groups(python);
  std::vector<std::size_t> evals = evals_by_name(native);
  if (evals.size() > groups.size()) {
    return Error(Errc::bad_data,
                 fmt::format("cannot merge: {} Python eval-loop calls but {} native eval-loop "
                             "frames in a stack cut short",
                             groups.size(), evals.size()));
  }
  // A stack cut short is the innermost part of the whole one: its eval-loop frames are the
  // innermost calls'.
  std::vector<std::vector<PythonFrame>> inner(groups.begin(),
                                              groups.begin() + static_cast<long>(evals.size()));
  std::vector<Frame> out = interleave(native, inner, evals);
  if (evals.size() == groups.size()) return out;
  Frame gap;
  gap.kind = FrameKind::native;
  gap.function = std::string(kNativeGap);
  out.push_back(std::move(gap));
  for (std::size_t g = evals.size(); g < groups.size(); ++g)
    for (const auto& p : groups[g]) out.push_back(p.frame);
  return out;
}

}  // namespace hangscan::python
