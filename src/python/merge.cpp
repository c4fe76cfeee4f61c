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
  if (f.kind != FrameKind::native) return false;   // inline frames share the physical frame
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

Result<std::vector<Frame>> merge_stacks(const std::vector<Frame>& native,
                                        const std::vector<PythonFrame>& python) {
  auto groups = eval_groups(python);
  bool has_default = false;
  for (const auto& f : native)
    if (f.kind == FrameKind::native && same_function(f.function, kEvalDefault)) has_default = true;
  std::size_t evals = 0;
  for (const auto& f : native)
    if (counts_as_eval(f, has_default)) ++evals;
  if (evals != groups.size()) {
    return Error(Errc::bad_data,
                 fmt::format("cannot merge: {} Python eval-loop calls ({} Python frames) but {} "
                             "native eval-loop frames",
                             groups.size(), python.size(), evals));
  }
  std::vector<Frame> out;
  out.reserve(native.size() + python.size());
  std::size_t g = 0;
  for (const auto& f : native) {
    if (counts_as_eval(f, has_default)) {
      for (const auto& p : groups[g]) out.push_back(p.frame);
      ++g;
    } else {
      out.push_back(f);
    }
  }
  return out;
}

std::optional<std::size_t> find_python_thread(const std::vector<PythonThreadStack>& stacks,
                                              int tid, std::optional<std::uint64_t> fs_base) {
  for (std::size_t i = 0; i < stacks.size(); ++i)
    if (stacks[i].native_tid && *stacks[i].native_tid == tid) return i;
  if (!fs_base || *fs_base == 0) return std::nullopt;
  for (std::size_t i = 0; i < stacks.size(); ++i)
    if (!stacks[i].native_tid && stacks[i].pthread_id == *fs_base) return i;
  return std::nullopt;
}

}  // namespace hangscan::python
