#include "proc/target_file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "proc/proc_files.h"
#include "util/job_control.h"
#include "util/parse_number.h"
#include "util/unique_fd.h"

namespace hangscan {

namespace {

constexpr std::size_t kMaxGroups = 65536;  // NGROUPS_MAX

// The fourth field of a "Uid:" or "Gid:" line: the fs id.
std::optional<unsigned> fs_id(std::string_view value) {
  auto f = split_fields(value);
  if (f.size() < 4) return std::nullopt;
  return parse_int<unsigned>(f[3]);
}

// `as`: the credentials the open used (nullopt: hangscan's own).
Error open_error(const std::optional<FileCredentials>& as, int err) {
  if (err == ENOENT || err == ENOTDIR) return Error(Errc::not_found, "no such file", err);
  if (err == EACCES || err == EPERM) {
    std::string who =
        as ? fmt::format("the process's user (uid {})", as->uid) : std::string("hangscan's user");
    return Error(Errc::permission, fmt::format("{} may not read it", who), err);
  }
  if (err == EXDEV || err == ELOOP)
    return Error(Errc::permission, "it leads outside the process's own files", err);
  return Error(Errc::io, fmt::format("cannot open it: {}", std::strerror(err)), err);
}

std::vector<gid_t> own_groups() {
  int n = ::getgroups(0, nullptr);
  std::vector<gid_t> g(static_cast<std::size_t>(std::max(n, 0)));
  if (n > 0) g.resize(static_cast<std::size_t>(std::max(::getgroups(n, g.data()), 0)));
  std::sort(g.begin(), g.end());
  return g;
}

// Gives the calling thread `as` for file access. Raw system calls: glibc's setgroups() would
// change every thread of hangscan, the kernel's calls change this thread only. The groups and
// fsgid first: once the fsuid is not 0 the thread has lost the capabilities they need.
bool take_credentials(const FileCredentials& as) {
  std::vector<gid_t> want = as.groups;
  std::sort(want.begin(), want.end());
  auto uid = static_cast<uid_t>(::syscall(SYS_setfsuid, -1));
  auto gid = static_cast<gid_t>(::syscall(SYS_setfsgid, -1));
  if (uid == as.uid && gid == as.gid && own_groups() == want) return true;
  if (::syscall(SYS_setgroups, want.size(), want.data()) != 0) return false;
  ::syscall(SYS_setfsgid, as.gid);
  if (static_cast<gid_t>(::syscall(SYS_setfsgid, -1)) != as.gid) return false;
  ::syscall(SYS_setfsuid, as.uid);
  return static_cast<uid_t>(::syscall(SYS_setfsuid, -1)) == as.uid;
}

// An O_PATH descriptor of `name` under `root`: nothing is opened for reading yet, so naming a
// FIFO or a device has no effect on it. Kernels without openat2 (before 5.6): the last
// component is not followed.
int open_path(int root, const TargetFileRequest& r) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = (r.beneath ? RESOLVE_BENEATH : RESOLVE_IN_ROOT) | RESOLVE_NO_MAGICLINKS;
  auto fd = static_cast<int>(::syscall(SYS_openat2, root, r.name.c_str(), &how, sizeof how));
  if (fd >= 0 || errno != ENOSYS) return fd;
  auto first = r.name.find_first_not_of('/');
  std::string rel = first == std::string::npos ? std::string(".") : r.name.substr(first);
  return ::openat(root, rel.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
}

std::int64_t unix_ns(const timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

Result<TargetFile> read_checked(int root, const TargetFileRequest& r) {
  // Without root, hangscan's own credentials are no more than its user's: they stay.
  std::optional<FileCredentials> as = ::geteuid() == 0 ? r.as : std::nullopt;
  if (as && !take_credentials(*as))
    return Error(
        Errc::permission,
        fmt::format("hangscan could not take the process's credentials (uid {})", as->uid));
  UniqueFd path(open_path(root, r));
  if (path.get() < 0) return open_error(as, errno);
  struct stat st {};
  if (::fstat(path.get(), &st) != 0) return open_error(as, errno);
  if (!S_ISREG(st.st_mode)) return Error(Errc::bad_data, "it is not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > r.max_bytes)
    return Error(Errc::bad_data, fmt::format("it is larger than {} bytes", r.max_bytes));
  // Reopening the O_PATH descriptor checks read permission with this thread's credentials.
  UniqueFd in(::open(fmt::format("/proc/thread-self/fd/{}", path.get()).c_str(),
                     O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (in.get() < 0) return open_error(as, errno);
  struct stat again {};
  if (::fstat(in.get(), &again) != 0 || again.st_ino != st.st_ino || again.st_dev != st.st_dev)
    return Error(Errc::io, "it changed while it was opened");
  TargetFile out;
  out.changed_ns = std::max(unix_ns(again.st_mtim), unix_ns(again.st_ctim));
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(in.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error(Errc::io, fmt::format("cannot read it: {}", std::strerror(errno)));
    if (n == 0) break;
    if (out.text.size() + static_cast<std::size_t>(n) > r.max_bytes)
      return Error(Errc::bad_data, fmt::format("it is larger than {} bytes", r.max_bytes));
    out.text.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// The root is opened with hangscan's own credentials (following /proc/PID/root needs them);
// everything under it with the target's.
int open_root(const TargetFileRequest& r) {
  return ::open(r.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
}

Result<TargetFile> read_guarded(int root, const TargetFileRequest& r) {
  UniqueFd keep(root);
  try {
    return read_checked(root, r);
  } catch (const std::exception& e) {
    return Error(Errc::internal, e.what());
  }
}

}  // namespace

// One request at a time: posted by the reader, answered by its thread.
struct TargetFileReader::Channel {
  std::mutex mu;
  std::condition_variable posted, answered;
  std::optional<std::pair<int, TargetFileRequest>> request;  // root fd, request
  std::optional<Result<TargetFile>> answer;
  bool busy = false;  // from a request's posting to its answer
  bool stop = false;
};

namespace {

void serve(const std::shared_ptr<TargetFileReader::Channel>& c) {
  // No signal is for this thread, which lives across the run's captures: the SIGCHLD of every
  // tracee's stop would otherwise wake it (measured: half of its futex calls in a dump of 8
  // ranks were waits restarted after one).
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::unique_lock lock(c->mu);
  for (;;) {
    c->posted.wait(lock, [&] { return c->request || c->stop; });
    if (!c->request) return;
    auto [root, request] = std::move(*c->request);
    c->request.reset();
    lock.unlock();
    Result<TargetFile> got = read_guarded(root, request);
    lock.lock();
    c->answer = std::move(got);
    c->busy = false;
    // Woken after the unlock: a reader woken while the lock is held only blocks on it again
    // (two more futex calls and context switches per file, a dump reads dozens).
    lock.unlock();
    c->answered.notify_all();
    lock.lock();
  }
}

}  // namespace

TargetFileReader::~TargetFileReader() { retire(); }

// Ends the thread: joined when idle, left to finish alone when a read of it timed out.
void TargetFileReader::retire() {
  if (!channel_) return;
  bool idle = false;
  {
    std::lock_guard lock(channel_->mu);
    channel_->stop = true;
    idle = !channel_->busy;
  }
  channel_->posted.notify_all();
  if (idle) {
    worker_.join();
  } else {
    worker_.detach();
  }
  channel_.reset();
  as_.reset();
}

Result<TargetFile> TargetFileReader::read(const TargetFileRequest& request) {
  std::lock_guard serial(mu_);
  if (channel_ && as_ != request.as) return read_file_as(request);
  int root = open_root(request);
  if (root < 0) return open_error(std::nullopt, errno);
  if (!channel_) {
    auto c = std::make_shared<Channel>();
    try {
      worker_ = thread_without_job_control_stops([c] { serve(c); });
    } catch (const std::system_error& e) {
      ::close(root);
      return Error(Errc::io, fmt::format("cannot start a thread to read it: {}", e.what()));
    }
    channel_ = std::move(c);
    as_ = request.as;
  }
  std::unique_lock lock(channel_->mu);
  channel_->answer.reset();
  channel_->request.emplace(root, request);
  channel_->busy = true;
  lock.unlock();  // the thread is woken without the lock held (see serve())
  channel_->posted.notify_all();
  lock.lock();
  if (!channel_->answered.wait_for(lock, request.timeout,
                                   [&] { return channel_->answer.has_value(); })) {
    lock.unlock();
    retire();  // a stuck file system: the thread ends when its read does
    return Error(Errc::timeout,
                 fmt::format("reading it took longer than {} ms", request.timeout.count()));
  }
  Result<TargetFile> got = std::move(*channel_->answer);
  channel_->answer.reset();
  return got;
}

int open_regular_file(const std::string& path) {
  UniqueFd at(::open(path.c_str(), O_PATH | O_CLOEXEC));
  struct stat st {};
  if (at.get() < 0 || ::fstat(at.get(), &st) != 0) return -1;
  if (!S_ISREG(st.st_mode)) {
    errno = EINVAL;
    return -1;
  }
  return ::open(fmt::format("/proc/self/fd/{}", at.get()).c_str(),
                O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
}

std::optional<FileCredentials> parse_file_credentials(std::string_view status) {
  std::optional<unsigned> uid, gid;
  std::vector<gid_t> groups;
  bool groups_ok = true;
  for_each_line(status, [&](std::string_view line) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::string_view key = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    if (key == "Uid") uid = fs_id(value);
    if (key == "Gid") gid = fs_id(value);
    if (key != "Groups") return;
    for (auto g : split_fields(value)) {
      auto id = parse_int<unsigned>(g);
      groups_ok = groups_ok && id && groups.size() < kMaxGroups;
      if (groups_ok) groups.push_back(*id);
    }
  });
  if (!uid || !gid || !groups_ok) return std::nullopt;
  return FileCredentials{*uid, *gid, std::move(groups)};
}

std::optional<FileCredentials> read_file_credentials(int pid) {
  auto text = read_text_file(fmt::format("/proc/{}/status", pid), 1 << 20);
  if (!text) return std::nullopt;
  return parse_file_credentials(*text);
}

std::optional<std::int64_t> process_start_unix_ns(int pid) {
  auto st = read_stat(pid);
  long tck = ::sysconf(_SC_CLK_TCK);
  timespec real{}, boot{};
  if (!st || tck <= 0 || ::clock_gettime(CLOCK_REALTIME, &real) != 0 ||
      ::clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
    return std::nullopt;
  auto ticks = static_cast<std::int64_t>(st->start_time);
  std::int64_t after_boot = ticks / tck * 1000000000 + ticks % tck * 1000000000 / tck;
  return unix_ns(real) - unix_ns(boot) + after_boot;
}

Result<TargetFile> read_file_as(const TargetFileRequest& request) {
  int root = open_root(request);
  if (root < 0) return open_error(std::nullopt, errno);
  auto done = std::make_shared<std::promise<Result<TargetFile>>>();
  auto result = done->get_future();
  std::thread worker;
  try {
    worker = std::thread([done, request, root] { done->set_value(read_guarded(root, request)); });
  } catch (const std::system_error& e) {
    ::close(root);
    return Error(Errc::io, fmt::format("cannot start a thread to read it: {}", e.what()));
  }
  if (result.wait_for(request.timeout) != std::future_status::ready) {
    worker.detach();  // a stuck file system: the thread ends when its read does
    return Error(Errc::timeout,
                 fmt::format("reading it took longer than {} ms", request.timeout.count()));
  }
  worker.join();
  return result.get();
}

}  // namespace hangscan
