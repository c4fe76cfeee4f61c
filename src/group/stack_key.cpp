// Thread selection, frame equality at a granularity, and frame labels.
#include "group/stack_key.h"

#include <functional>

#include <fmt/format.h>

#include "util/hash_mix.h"

namespace hangscan {

Status validate_group_options(const GroupOptions& opts) {
  if (opts.top_n < 0)
    return Error(Errc::usage, fmt::format("top N must be >= 0, got {}", opts.top_n));
  if (opts.threads == GroupOptions::Threads::matching) {
    if (opts.thread_regex.empty()) {
      return Error(Errc::usage, "thread selection 'matching' needs a regex on the thread name");
    }
    auto re = Pattern::compile(opts.thread_regex);
    if (!re) {
      return Error(Errc::usage, fmt::format("bad thread regex \"{}\": {}", opts.thread_regex,
                                            re.error().message));
    }
  }
  return Ok{};
}

ThreadSelector::ThreadSelector(const GroupOptions& opts) : mode_(opts.threads) {
  if (mode_ != GroupOptions::Threads::matching) return;
  auto re = Pattern::compile(opts.thread_regex);
  if (re) regex_ = *re;
  else regex_ok_ = false;
}

std::vector<std::size_t> ThreadSelector::select(const ProcessSnapshot& process) const {
  std::vector<std::size_t> out;
  const auto& threads = process.threads;
  switch (mode_) {
    case GroupOptions::Threads::main: {
      for (std::size_t i = 0; i < threads.size(); ++i) {
        if (is_main_thread(process, threads[i])) {
          out.push_back(i);
          return out;
        }
      }
      if (!threads.empty()) out.push_back(0);
      return out;
    }
    case GroupOptions::Threads::all:
      for (std::size_t i = 0; i < threads.size(); ++i) out.push_back(i);
      return out;
    case GroupOptions::Threads::gil:
      for (std::size_t i = 0; i < threads.size(); ++i) {
        if (threads[i].gil.value_or(false)) out.push_back(i);
      }
      return out;
    case GroupOptions::Threads::matching:
      if (!regex_ok_) return out;
      for (std::size_t i = 0; i < threads.size(); ++i) {
        if (regex_->search(threads[i].name)) out.push_back(i);
      }
      return out;
  }
  return out;
}

FrameRange key_frames(const ThreadSnapshot& thread, int top_n) {
  const std::vector<Frame>& v = thread.frames.empty() ? thread.native_frames : thread.frames;
  FrameRange r{v.data(), v.data() + v.size()};
  if (top_n > 0 && v.size() > static_cast<std::size_t>(top_n)) r.end = r.begin + top_n;
  return r;
}

std::string_view base_name(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

namespace {

bool is_native(FrameKind k) { return k == FrameKind::native || k == FrameKind::inline_frame; }

// Where a function lives: the source file for python, the module for native code.
std::string_view where(const Frame& f) {
  if (is_native(f.kind)) return base_name(f.module);
  return f.file ? base_name(*f.file) : std::string_view{};
}

std::string_view file_base(const Frame& f) {
  return f.file ? base_name(*f.file) : std::string_view{};
}

}  // namespace

// Same file/module, checked on the full path first: equal paths (the common case) need no
// basename search.
bool same_where(const Frame& a, const Frame& b) {
  if (is_native(a.kind)) return a.module == b.module || where(a) == where(b);
  if (a.file.has_value() != b.file.has_value()) return false;
  return !a.file || *a.file == *b.file || where(a) == where(b);
}

bool same_key_frame(const Frame& a, const Frame& b, GroupOptions::Granularity g) {
  if (a.kind != b.kind) return false;
  using G = GroupOptions::Granularity;
  if (g == G::pc && is_native(a.kind)) {
    return a.offset == b.offset && a.function == b.function && same_where(a, b);
  }
  if (a.function != b.function || !same_where(a, b)) return false;
  if (g == G::function) return true;
  return a.line == b.line && (a.file == b.file || file_base(a) == file_base(b));
}

std::size_t key_frame_hash(const Frame& f, GroupOptions::Granularity g) {
  std::size_t h = std::hash<std::string_view>{}(f.function);
  hash_mix(h, std::hash<std::string_view>{}(where(f)));
  h ^= static_cast<std::size_t>(f.kind) * 0x100000001b3ULL;
  if (g != GroupOptions::Granularity::function)
    h ^= static_cast<std::size_t>(f.line.value_or(-1)) * 31u;
  if (g == GroupOptions::Granularity::pc) h ^= static_cast<std::size_t>(f.offset) * 0x9e3779b1u;
  return h;
}

Frame key_frame_copy(const Frame& f, GroupOptions::Granularity g) {
  Frame out;
  out.kind = f.kind;
  out.function = f.function;
  out.file = f.file;
  out.module = f.module;
  out.build_id = f.build_id;
  using G = GroupOptions::Granularity;
  if (g != G::function) out.line = f.line;
  if (g == G::pc) {
    out.offset = f.offset;
    out.pc = f.pc;
  }
  return out;
}

std::string short_frame_label(const Frame& f) {
  if (f.file && f.line) return fmt::format("{} ({}:{})", f.function, base_name(*f.file), *f.line);
  return f.function;
}

std::string granular_frame_label(const Frame& f, GroupOptions::Granularity g) {
  using G = GroupOptions::Granularity;
  switch (g) {
    case G::function:
      return f.function;
    case G::function_line:
      return short_frame_label(f);
    case G::pc:
      if (is_native(f.kind)) return fmt::format("{}+{:#x}", base_name(f.module), f.offset);
      return short_frame_label(f);
  }
  return f.function;
}

}  // namespace hangscan
