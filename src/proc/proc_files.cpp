#include "proc/proc_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "util/parse_number.h"

namespace hangscan {

namespace {

// Leaves `out` untouched when `s` is not a number of its type.
template <class T>
bool parse_num(std::string_view s, T& out, int base = 10) {
  auto v = parse_int<T>(s, base);
  if (v) out = *v;
  return v.has_value();
}

std::vector<std::string_view> fields(std::string_view s) { return split_fields(s); }

// The entries of `dir` named by a positive int, sorted; closes `dir`.
std::vector<int> positive_entries(DIR* dir) {
  std::vector<int> out;
  while (dirent* ent = ::readdir(dir)) {
    if (auto v = parse_int_in<int>(ent->d_name, 1, std::numeric_limits<int>::max()))
      out.push_back(*v);
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string_view> split_fields(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::optional<std::string> read_link(const std::string& path) {
  return read_link_at(AT_FDCWD, path.c_str());
}

std::optional<std::string> read_link_at(int dir_fd, const char* name) {
  char buf[PATH_MAX + 1];
  ssize_t n = ::readlinkat(dir_fd, name, buf, sizeof buf);
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof buf) return std::nullopt;
  return std::string(buf, static_cast<std::size_t>(n));
}

Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    Errc code = err == ENOENT || err == ESRCH     ? Errc::not_found
                : (err == EACCES || err == EPERM) ? Errc::permission
                                                  : Errc::io;
    return Error(code, fmt::format("cannot open {}: {}", path, std::strerror(err)), err);
  }
  std::string out;
  char buf[8192];
  while (out.size() < max_bytes) {
    ssize_t n = ::read(fd, buf, std::min(sizeof(buf), max_bytes - out.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return Error(err == EACCES || err == EPERM ? Errc::permission : Errc::io,
                   fmt::format("cannot read {}: {}", path, std::strerror(err)), err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::vector<Mapping> parse_maps(std::string_view text) {
  std::vector<Mapping> out;
  for_each_line(text, [&](std::string_view line) {
    // start-end perms offset dev inode [path]
    auto f = fields(line);
    if (f.size() < 5) return;
    auto dash = f[0].find('-');
    if (dash == std::string_view::npos) return;
    Mapping m;
    if (!parse_num(f[0].substr(0, dash), m.start, 16) ||
        !parse_num(f[0].substr(dash + 1), m.end, 16) || m.end < m.start)
      return;
    m.perms = std::string(f[1]);
    if (!parse_num(f[2], m.offset, 16)) return;
    parse_num(f[4], m.inode);
    if (f.size() >= 6) {
      // The path is everything after the inode field (it may contain spaces).
      std::size_t pos =
          line.find(f[5], static_cast<std::size_t>(f[4].data() - line.data()) + f[4].size());
      std::string_view path = trim_space(line.substr(pos));
      constexpr std::string_view kDeleted = " (deleted)";
      if (path.size() > kDeleted.size() && path.substr(path.size() - kDeleted.size()) == kDeleted) {
        m.deleted = true;
        path.remove_suffix(kDeleted.size());
      }
      m.path = std::string(path);
    }
    out.push_back(std::move(m));
  });
  return out;
}

std::optional<ProcStat> parse_stat(std::string_view text) {
  ProcStat st;
  auto open = text.find('(');
  auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  if (!parse_num(text.substr(0, open), st.pid)) return std::nullopt;
  st.comm = std::string(text.substr(open + 1, close - open - 1));
  auto f = fields(text.substr(close + 1));
  // f[0] = state (field 3), f[1] = ppid (4), f[6] = flags (9), f[11] = utime (14),
  // f[12] = stime (15), f[17] = num_threads (20), f[19] = starttime (22), f[25] = startstack
  // (28), f[36] = processor (39).
  if (f.size() < 20 || f[0].size() != 1) return std::nullopt;
  st.state = f[0][0];
  if (!parse_num(f[1], st.ppid)) return std::nullopt;
  parse_num(f[6], st.flags);
  parse_num(f[11], st.utime);
  parse_num(f[12], st.stime);
  parse_num(f[17], st.num_threads);
  parse_num(f[19], st.start_time);
  if (f.size() > 25) parse_num(f[25], st.start_stack);  // field 28
  if (f.size() > 36) parse_num(f[36], st.processor);    // field 39
  return st;
}

std::optional<ProcStatus> parse_status(std::string_view text) {
  ProcStatus st;
  bool any = false;
  for_each_line(text, [&](std::string_view line) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::string_view key = line.substr(0, colon);
    std::string_view val = trim_space(line.substr(colon + 1));
    any = true;
    if (key == "Name") {
      st.name = std::string(val);
    } else if (key == "State") {
      if (!val.empty()) st.state = val[0];
    } else if (key == "Tgid") {
      parse_num(val, st.tgid);
    } else if (key == "PPid") {
      parse_num(val, st.ppid);
    } else if (key == "TracerPid") {
      parse_num(val, st.tracer_pid);
    } else if (key == "Uid") {
      auto f = fields(val);
      if (f.size() >= 2) {
        parse_num(f[0], st.uid);
        parse_num(f[1], st.euid);
      }
    }
  });
  if (!any) return std::nullopt;
  return st;
}

std::optional<std::string> parse_syscall(std::string_view text) {
  text = trim_space(text);
  if (text.empty()) return std::nullopt;
  if (text == "running") return std::string("running");
  auto f = fields(text);
  long nr = 0;
  if (f.empty() || !parse_num(f[0], nr)) return std::nullopt;
  if (nr < 0) return std::string("none");
  return syscall_name(nr);
}

std::optional<std::uint64_t> parse_syscall_sp(std::string_view text) {
  auto f = fields(trim_space(text));
  if (f.size() < 3) return std::nullopt;
  std::string_view sp = f[f.size() - 2];
  if (sp.size() > 2 && sp.substr(0, 2) == "0x") sp.remove_prefix(2);
  std::uint64_t v = 0;
  if (!parse_num(sp, v, 16)) return std::nullopt;
  return v;
}

std::vector<std::uint64_t> parse_syscall_args(std::string_view text) {
  auto f = fields(trim_space(text));
  long nr = 0;
  if (f.size() != 9 || !parse_num(f[0], nr) || nr < 0) return {};
  std::vector<std::uint64_t> args;
  for (std::size_t i = 1; i <= 6; ++i) {
    std::string_view a = f[i];
    if (a.size() > 2 && a.substr(0, 2) == "0x") a.remove_prefix(2);
    std::uint64_t v = 0;
    if (!parse_num(a, v, 16)) return {};
    args.push_back(v);
  }
  return args;
}

std::vector<Frame> parse_kernel_stack(std::string_view text) {
  std::vector<Frame> out;
  for_each_line(text, [&](std::string_view line) {
    line = trim_space(line);
    if (line.empty()) return;
    auto close = line.find("] ");
    if (line.front() == '[' && close != std::string_view::npos) line.remove_prefix(close + 2);
    line = trim_space(line);
    if (line.empty()) return;
    Frame fr;
    fr.kind = FrameKind::kernel;
    auto plus = line.find('+');
    std::string_view name = plus == std::string_view::npos ? line : line.substr(0, plus);
    fr.function = std::string(name);
    if (plus != std::string_view::npos) {
      auto rest = line.substr(plus + 1);
      auto slash = rest.find('/');
      std::string_view off = rest.substr(0, slash);
      if (off.size() > 2 && off.substr(0, 2) == "0x") parse_num(off.substr(2), fr.offset, 16);
    }
    auto sp = line.find(" [");
    if (sp != std::string_view::npos) {
      auto mod = line.substr(sp + 2);
      if (!mod.empty() && mod.back() == ']') mod.remove_suffix(1);
      fr.module = std::string(mod);
      if (plus == std::string_view::npos || plus > sp)
        fr.function = std::string(line.substr(0, sp));
    } else {
      fr.module = "[kernel]";
    }
    out.push_back(std::move(fr));
  });
  return out;
}

std::vector<std::string> split_nul(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    auto z = text.find('\0');
    out.emplace_back(text.substr(0, z));
    if (z == std::string_view::npos) break;
    text.remove_prefix(z + 1);
  }
  return out;
}

Result<std::vector<int>> list_tasks(int pid) {
  std::string path = fmt::format("/proc/{}/task", pid);
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    int err = errno;
    return Error(
        err == ENOENT ? Errc::no_such_process : Errc::io,
        fmt::format("pid {}: {}", pid, err == ENOENT ? "no such process" : std::strerror(err)),
        err);
  }
  return positive_entries(dir);
}

std::vector<int> list_pids(const std::string& proc_root) {
  DIR* dir = ::opendir(proc_root.c_str());
  return dir != nullptr ? positive_entries(dir) : std::vector<int>{};
}

std::optional<ProcStat> read_stat(int pid, int tid) {
  auto text = read_text_file(tid == 0 ? fmt::format("/proc/{}/stat", pid)
                                      : fmt::format("/proc/{}/task/{}/stat", pid, tid));
  if (!text) return std::nullopt;
  return parse_stat(*text);
}

std::optional<ProcStatus> read_status(int pid) {
  auto text = read_text_file(fmt::format("/proc/{}/status", pid));
  if (!text) return std::nullopt;
  return parse_status(*text);
}

std::optional<std::string> read_wchan(int pid, int tid) {
  auto text = read_text_file(fmt::format("/proc/{}/task/{}/wchan", pid, tid));
  if (!text) return std::nullopt;
  std::string_view v = trim_space(*text);
  if (v.empty() || v == "0") return std::nullopt;
  return std::string(v);
}

std::string read_comm(int pid, int tid) {
  auto text = read_text_file(fmt::format("/proc/{}/task/{}/comm", pid, tid));
  if (!text) return {};
  return std::string(trim_space(*text));
}

bool process_exiting(int pid) {
  constexpr unsigned long kPfExiting = 0x4;
  auto st = read_stat(pid);
  if (!st) return true;
  return st->state == 'Z' || st->state == 'X' || (st->flags & kPfExiting) != 0;
}

Error exiting_error(int pid, int err) {
  return Error(Errc::no_such_process, fmt::format("pid {}: the process is exiting", pid), err,
               "it ended while hangscan was reading it: there is nothing left to capture");
}

std::optional<std::uint64_t> parse_io_chars(std::string_view text) {
  std::optional<std::uint64_t> r, w;
  for_each_line(text, [&](std::string_view line) {
    auto f = split_fields(line);
    if (f.size() != 2) return;
    auto v = parse_int<std::uint64_t>(f[1]);
    if (!v) return;
    if (f[0] == "rchar:") r = *v;
    if (f[0] == "wchar:") w = *v;
  });
  if (!r || !w) return std::nullopt;
  return *r + *w;
}

std::optional<std::uint64_t> read_io_chars(int pid) {
  auto text = read_text_file(fmt::format("/proc/{}/io", pid));
  if (!text) return std::nullopt;
  return parse_io_chars(*text);
}

}  // namespace hangscan
