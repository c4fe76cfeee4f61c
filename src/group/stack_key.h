// Stack keys: which threads of a process identify it, and when two frames count as "the same".
//
// Why: grouping is only as good as its notion of equality. Ranks of one job differ in helper
// threads and in return addresses (ASLR), so the key is built from the chosen threads (the main
// thread by default) at a chosen granularity, and the same rules label frames in every writer.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hangscan/model.h"
#include "hangscan/result.h"
#include "util/pattern.h"

namespace hangscan {

struct GroupOptions {
  enum class Threads {
    main,
    all,
    gil,
    matching /* regex on thread name */
  } threads = Threads::main;
  enum class Granularity { function, function_line, pc } granularity = Granularity::function;
  int top_n = 0;  // 0 = whole stack; otherwise keep only the N innermost frames
  std::string thread_regex;
};

// Why: the CLI must reject a bad --threads regex before capture starts, not after.
Status validate_group_options(const GroupOptions& opts);

// The thread selection of one GroupOptions, with its regex compiled once.
class ThreadSelector {
 public:
  explicit ThreadSelector(const GroupOptions& opts);
  // Indexes into process.threads of the threads that make up the key. `main` falls back to
  // the first thread when no thread is marked is_main (cores of odd processes).
  std::vector<std::size_t> select(const ProcessSnapshot& process) const;
  bool regex_ok() const { return regex_ok_; }

 private:
  GroupOptions::Threads mode_;
  std::optional<Pattern> regex_;
  bool regex_ok_ = true;
};

// The frames a thread is keyed by: `frames`, or `native_frames` when `frames` is empty, cut to
// the innermost top_n. Returned as [begin, end) of the innermost-first vector.
struct FrameRange {
  const Frame* begin = nullptr;
  const Frame* end = nullptr;
  std::size_t size() const { return static_cast<std::size_t>(end - begin); }
};
FrameRange key_frames(const ThreadSnapshot& thread, int top_n);

// True when `a` and `b` are the same frame at granularity `g`. Function granularity compares
// kind, function and the basename of the file (python) or module (native); function_line adds
// the line; pc compares module basename + offset (python frames: function + file + line).
bool same_key_frame(const Frame& a, const Frame& b, GroupOptions::Granularity g);
std::size_t key_frame_hash(const Frame& f, GroupOptions::Granularity g);

// Copy of `f` keeping only what the key at `g` compares (so a group does not show one
// member's line number as if all members shared it).
Frame key_frame_copy(const Frame& f, GroupOptions::Granularity g);

std::string_view base_name(std::string_view path);

// "function (file.py:19)" or "function" (no location); used in sentences and the tree.
std::string short_frame_label(const Frame& f);
// The label folded stacks and DOT nodes use at a granularity: "function",
// "function (file:line)", or "module+0xoffset" for native frames at pc granularity.
std::string granular_frame_label(const Frame& f, GroupOptions::Granularity g);

}  // namespace hangscan
