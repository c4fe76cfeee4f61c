#include "proc/since_state.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "proc/proc_files.h"
#include "util/parse_number.h"

namespace hangscan {

namespace {

constexpr std::size_t kMaxFileBytes = 64 * 1024;
constexpr std::size_t kMaxRecords = 256;   // files kept in the directory
constexpr std::size_t kMaxScanned = 4096;  // directory entries looked at by prune()
constexpr std::string_view kMagic = "hangscan-since 1";

std::string file_name(int pid, std::uint64_t start_ticks) {
  return fmt::format("{}-{}.since", pid, start_ticks);
}

// Opens (making it if needed) `name` under `parent` as a directory owned by us and closed to
// others; -1 otherwise. Never follows a link.
int safe_subdir(int parent, const char* name) {
  if (::mkdirat(parent, name, 0700) != 0 && errno != EEXIST) return -1;
  int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::optional<SinceThread> parse_thread(std::string_view line) {
  auto f = split_fields(line);
  if (f.size() != 13 || f[0] != "thread") return std::nullopt;
  SinceThread t;
  auto tid = parse_int_in<int>(f[1], 1, 1 << 30);
  auto since = parse_finite_double(f[2]);
  auto seen = parse_finite_double(f[3]);
  auto ticks = parse_int<std::uint64_t>(f[4]);
  auto stops = parse_int_in<int>(f[5], 1, 1 << 20);
  if (!tid || !since || !seen || !ticks || !stops || f[6].size() > 32) return std::nullopt;
  t = {*tid, *since, *seen, *ticks, *stops, std::string(f[6]), {}};
  for (std::size_t i = 7; i < 13; ++i) {
    auto a = parse_int<std::uint64_t>(f[i], 16);
    if (!a) return std::nullopt;
    t.args.push_back(*a);
  }
  return t;
}

// Still the wait an earlier dump saw: the same call (or its restart), and run only for the
// stops since (`between`: the earlier dumps' and this run's samples before the last). A stop
// adds two runs; one more is allowed once (measured: a thread group leader sometimes had 3).
bool same_wait(const ThreadSnapshot& t, const SinceThread& e, int between) {
  if (!t.blocked_s || !t.syscall || !t.timeslices) return false;
  if (*t.syscall != e.syscall && *t.syscall != "restart_syscall") return false;
  return *t.timeslices >= e.timeslices &&
         *t.timeslices - e.timeslices <= 2 * static_cast<std::uint64_t>(between) + 1;
}

}  // namespace

std::string format_since_record(const SinceRecord& r) {
  std::string out = fmt::format("{}\nprocess {} {}\n", kMagic, r.pid, r.start_ticks);
  for (const SinceThread& t : r.threads) {
    if (t.args.size() != 6 || t.syscall.empty() || t.syscall.size() > 32 ||
        t.syscall.find_first_of(" \n") != std::string::npos)
      continue;
    std::string line =
        fmt::format("thread {} {:.3f} {:.3f} {} {} {} {:x} {:x} {:x} {:x} {:x} {:x}\n", t.tid,
                    t.since, t.first_seen_at, t.timeslices, t.stops, t.syscall, t.args[0],
                    t.args[1], t.args[2], t.args[3], t.args[4], t.args[5]);
    if (out.size() + line.size() > kMaxFileBytes) break;
    out += line;
  }
  return out;
}

std::optional<SinceRecord> parse_since_record(std::string_view text) {
  SinceRecord r;
  bool ok = true;
  int line_no = 0;
  for_each_line(text, [&](std::string_view line) {
    if (!ok) return;
    ++line_no;
    if (line_no == 1) {
      ok = line == kMagic;
      return;
    }
    if (line_no == 2) {
      auto f = split_fields(line);
      auto pid =
          f.size() == 3 && f[0] == "process" ? parse_int_in<int>(f[1], 1, 1 << 30) : std::nullopt;
      auto start = f.size() == 3 ? parse_int<std::uint64_t>(f[2]) : std::nullopt;
      ok = pid && start;
      if (ok) r = {*pid, *start, {}};
      return;
    }
    auto t = parse_thread(line);
    ok = t.has_value();
    if (ok) r.threads.push_back(std::move(*t));
  });
  if (!ok || line_no < 2) return std::nullopt;
  return r;
}

SinceRecord carry_since(ProcessSnapshot& p, const SinceRecord* earlier, int stops) {
  SinceRecord out{p.pid, p.start_ticks, {}};
  if (!p.captured_at) return out;
  std::map<int, const SinceThread*> before;
  if (earlier && earlier->pid == p.pid && earlier->start_ticks == p.start_ticks) {
    for (const SinceThread& e : earlier->threads) before[e.tid] = &e;
  }
  for (ThreadSnapshot& t : p.threads) {
    if (!t.blocked_s || !t.syscall || !t.timeslices || t.syscall_args.size() != 6) continue;
    const double now_since = *p.captured_at - *t.blocked_s;
    auto it = before.find(t.tid);
    if (it == before.end() || !same_wait(t, *it->second, it->second->stops + stops - 1)) {
      if (*t.syscall == "restart_syscall") continue;  // its real call is not known
      // Its runs were read before the last sample's stop: that one stop comes after.
      out.threads.push_back(
          {t.tid, now_since, *p.captured_at, *t.timeslices, 1, *t.syscall, t.syscall_args});
      continue;
    }
    SinceThread e = *it->second;
    if (*t.syscall == "restart_syscall") {
      t.syscall = e.syscall;
      t.syscall_args = e.args;
    }
    if (e.since < now_since) {
      t.blocked_s = std::round((*p.captured_at - e.since) * 1000.0) / 1000.0;
      t.blocked_first_seen_at = e.first_seen_at;
    }
    e.since = std::min(e.since, now_since);
    e.stops += stops;
    out.threads.push_back(std::move(e));
  }
  return out;
}

std::optional<SinceStore> SinceStore::open_default() {
  std::string base;
  if (::geteuid() == 0) {
    base = "/run";
  } else if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && xdg[0] == '/') {
    base = xdg;
  } else {
    return std::nullopt;
  }
  int root = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return std::nullopt;
  int mine = safe_subdir(root, "hangscan");
  ::close(root);
  if (mine < 0) return std::nullopt;
  int since = safe_subdir(mine, "since");
  ::close(mine);
  if (since < 0) return std::nullopt;
  return SinceStore(since);
}

SinceStore::~SinceStore() {
  if (dir_ >= 0) ::close(dir_);
}

std::optional<SinceRecord> SinceStore::load(int pid, std::uint64_t start_ticks) const {
  std::string name = file_name(pid, start_ticks);
  int fd = ::openat(dir_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::string text(kMaxFileBytes + 1, '\0');
  ssize_t n = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
      (st.st_mode & 077) == 0 && st.st_size <= static_cast<off_t>(kMaxFileBytes)) {
    n = ::read(fd, text.data(), text.size());
  }
  ::close(fd);
  if (n < 0 || static_cast<std::size_t>(n) > kMaxFileBytes) return std::nullopt;
  text.resize(static_cast<std::size_t>(n));
  auto r = parse_since_record(text);
  if (!r || r->pid != pid || r->start_ticks != start_ticks) return std::nullopt;
  return r;
}

void SinceStore::save(const SinceRecord& r) const {
  std::string name = file_name(r.pid, r.start_ticks);
  std::string tmp = fmt::format(".{}.{}", name, ::getpid());
  ::unlinkat(dir_, tmp.c_str(), 0);
  int fd = ::openat(dir_, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  std::string text = format_since_record(r);
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ::close(fd) == 0 && ok;
  // rename() replaces whatever is at `name` (a planted link included) without following it.
  if (!ok || ::renameat(dir_, tmp.c_str(), dir_, name.c_str()) != 0)
    ::unlinkat(dir_, tmp.c_str(), 0);
}

void SinceStore::prune() const {
  int fd = ::dup(dir_);
  DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
  if (!d) {
    if (fd >= 0) ::close(fd);
    return;
  }
  std::vector<std::pair<double, std::string>> kept;  // (mtime, name)
  std::size_t scanned = 0;
  while (dirent* e = ::readdir(d)) {
    if (++scanned > kMaxScanned) break;
    std::string_view name = e->d_name;
    auto dash = name.find('-');
    if (name.size() < 7 || name.substr(name.size() - 6) != ".since" || dash == 0 ||
        dash == std::string_view::npos)
      continue;
    auto pid = parse_int<int>(name.substr(0, dash));
    auto start = parse_int<std::uint64_t>(name.substr(dash + 1, name.size() - 6 - dash - 1));
    auto stat = pid ? read_stat(*pid) : std::nullopt;
    struct stat st {};
    if (!pid || !start || !stat || stat->start_time != *start) {
      ::unlinkat(dir_, e->d_name, 0);  // the process is gone: its record can never match again
    } else if (::fstatat(dir_, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      kept.emplace_back(static_cast<double>(st.st_mtime), std::string(name));
    }
  }
  ::closedir(d);
  if (kept.size() <= kMaxRecords) return;
  std::sort(kept.begin(), kept.end());
  for (std::size_t i = 0; i + kMaxRecords < kept.size(); ++i)
    ::unlinkat(dir_, kept[i].second.c_str(), 0);
}

void carry_since_state(JobSnapshot& job, int stops) {
  auto store = SinceStore::open_default();
  if (!store) return;
  for (ProcessSnapshot& p : job.processes) {
    if (p.core || p.death || p.threads.empty() || !p.captured_at || p.start_ticks == 0) continue;
    auto earlier = store->load(p.pid, p.start_ticks);
    store->save(carry_since(p, earlier ? &*earlier : nullptr, stops));
  }
  store->prune();
}

}  // namespace hangscan
