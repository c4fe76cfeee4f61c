#include "util/safe_output.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <deque>
#include <utility>

#include "util/unique_fd.h"

namespace hangscan {

namespace {

constexpr int kMaxLinks = 40;  // as the kernel's own limit (ELOOP)

std::deque<std::string> components(std::string_view path) {
  std::deque<std::string> out;
  std::size_t pos = 0;
  while (pos <= path.size()) {
    std::size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(pos, slash - pos);
    if (!part.empty() && part != ".") out.emplace_back(part);
    pos = slash + 1;
  }
  return out;
}

bool trusted_owner(uid_t uid) { return uid == 0 || uid == ::geteuid(); }

// "nobody (uid 65534)", or "uid 1234" when the name is unknown.
std::string owner_text(uid_t uid) {
  passwd pw{};
  passwd* found = nullptr;
  char buf[1024];
  if (::getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 && found != nullptr)
    return fmt::format("{} (uid {})", found->pw_name, uid);
  return fmt::format("uid {}", uid);
}

constexpr const char* kRefusedHint =
    "write to a directory that only you or root can write: a new path is made for you "
    "(e.g. under /root or /var/tmp), or run hangscan as the directory's owner";

Error refused(const OutputDirOptions& o, const std::string& path, const std::string& why) {
  return Error(Errc::permission, fmt::format("refusing {} {}: {}", o.option, path, why), EPERM,
               kRefusedHint);
}

Error open_error(const OutputDirOptions& o, const std::string& path, int err) {
  return Error(err == EACCES ? Errc::permission : Errc::io,
               fmt::format("cannot open {} {}: {}", o.option, path, std::strerror(err)), err,
               fmt::format("choose a directory you can write with {} DIR", o.option));
}

// One step of the walk: NAME in `dir`, made when missing and asked to, opened without
// following it (a link is returned as a link).
Result<UniqueFd> open_step(int dir, const std::string& name, bool create, mode_t mode) {
  int fd = ::openat(dir, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create) {
    if (::mkdirat(dir, name.c_str(), mode) != 0 && errno != EEXIST)
      return Error(Errc::io, "mkdir", errno);
    fd = ::openat(dir, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0) return Error(Errc::io, "open", errno);
  return UniqueFd(fd);
}

// Resolves `path` one component at a time from / or the working directory, following a link
// only when root or the caller owns it; returns the directory (an O_PATH descriptor).
Result<UniqueFd> walk(const std::string& path, const OutputDirOptions& o) {
  UniqueFd cur(::open(path.front() == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (cur.get() < 0) return open_error(o, path, errno);
  std::deque<std::string> todo = components(path);
  int links = 0;
  while (!todo.empty()) {
    std::string name = std::move(todo.front());
    todo.pop_front();
    auto step = open_step(cur.get(), name, o.create, o.mode);
    if (!step) return open_error(o, path, step.error().sys_errno);
    struct stat st {};
    if (::fstat(step->get(), &st) != 0) return open_error(o, path, errno);
    if (S_ISLNK(st.st_mode)) {
      if (!trusted_owner(st.st_uid)) {
        return refused(o, path,
                       fmt::format("'{}' on the way is a symbolic link of {}; not followed", name,
                                   owner_text(st.st_uid)));
      }
      char target[PATH_MAX];
      ssize_t n = ::readlinkat(step->get(), "", target, sizeof(target));
      if (n <= 0 || ++links > kMaxLinks) return open_error(o, path, n <= 0 ? errno : ELOOP);
      std::string_view t(target, static_cast<std::size_t>(n));
      auto more = components(t);
      todo.insert(todo.begin(), more.begin(), more.end());
      if (t.front() == '/') cur = UniqueFd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
      continue;
    }
    if (!S_ISDIR(st.st_mode)) return open_error(o, path, ENOTDIR);
    cur = std::move(*step);
  }
  return cur;
}

// Refuses a directory that someone other than root or the caller owns or may write (unless
// it is sticky, like /tmp: then others cannot rename or remove what hangscan made).
Status check_directory(int fd, const std::string& path, const OutputDirOptions& o) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return open_error(o, path, errno);
  if (!trusted_owner(st.st_uid)) {
    return refused(o, path,
                   fmt::format("it belongs to {}, who could replace what hangscan writes there",
                               owner_text(st.st_uid)));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return refused(o, path,
                   fmt::format("others may write it (mode {:04o}) and replace what hangscan "
                               "writes there",
                               st.st_mode & 07777));
  }
  return Ok{};
}

// A file name inside the directory: never a path ("a/b", "..") that would leave it.
bool plain_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos;
}

}  // namespace

Result<OutputDir> OutputDir::open(const std::string& path, const OutputDirOptions& options) {
  if (path.empty()) {
    return Error(Errc::usage, fmt::format("{} is empty", options.option), 0,
                 fmt::format("give a directory: {} DIR", options.option));
  }
  auto dir = walk(path, options);
  if (!dir) return std::move(dir).error();
  UniqueFd fd(::openat(dir->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return open_error(options, path, errno);
  if (auto st = check_directory(fd.get(), path, options); !st) return std::move(st).error();
  return OutputDir(fd.release(), path, options.option);
}

OutputDir::OutputDir(int fd, std::string path, std::string option)
    : fd_(fd), path_(std::move(path)), option_(std::move(option)) {}

OutputDir::OutputDir(OutputDir&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      option_(std::move(other.option_)) {}

OutputDir& OutputDir::operator=(OutputDir&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    option_ = std::move(other.option_);
  }
  return *this;
}

OutputDir::~OutputDir() {
  if (fd_ >= 0) ::close(fd_);
}

std::string OutputDir::path_of(std::string_view name) const {
  if (path_.empty() || path_.back() == '/') return fmt::format("{}{}", path_, name);
  return fmt::format("{}/{}", path_, name);
}

Error OutputDir::write_error(std::string_view name, int err) const {
  std::string hint =
      err == ENOSPC || err == EDQUOT
          ? fmt::format(
                "free space in {} (df {}) or choose another {} DIR; no partial file was "
                "left there",
                path_, path_, option_)
          : fmt::format("choose a directory you can write with {} DIR", option_);
  return Error(err == EACCES ? Errc::permission : Errc::io,
               fmt::format("cannot write {}: {}", path_of(name), std::strerror(err)), err,
               std::move(hint));
}

Result<int> OutputDir::create_new(std::string_view name, mode_t mode) const {
  std::string n(name);
  if (!plain_name(name)) {
    return Error(Errc::io,
                 fmt::format("cannot create {}: {}", path_of(name), std::strerror(EINVAL)), EINVAL);
  }
  int fd = ::openat(fd_, n.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    int err = errno;
    return Error(err == EACCES ? Errc::permission : Errc::io,
                 fmt::format("cannot create {}: {}", path_of(name), std::strerror(err)), err);
  }
  ::fchmod(fd, mode);  // whatever the umask
  return fd;
}

Status OutputDir::write_file(std::string_view name, std::string_view text, mode_t mode) const {
  if (!plain_name(name)) return write_error(name, EINVAL);
  std::string temp;
  Result<int> fd = Error(Errc::io, "", EEXIST);
  for (int i = 0; i < 100 && !fd && fd.error().sys_errno == EEXIST; ++i) {
    temp = fmt::format(".{}.tmp-{}-{}", name, ::getpid(), i);
    fd = create_new(temp, mode);
  }
  if (!fd) return write_error(name, fd.error().sys_errno);
  int err = 0;
  for (std::size_t done = 0; done < text.size() && err == 0;) {
    ssize_t n = ::write(*fd, text.data() + done, text.size() - done);
    if (n > 0) done += static_cast<std::size_t>(n);
    else if (n < 0 && errno != EINTR) err = errno;
  }
  if (::close(*fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::renameat(fd_, temp.c_str(), fd_, std::string(name).c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlinkat(fd_, temp.c_str(), 0);
    return write_error(name, err);
  }
  return Ok{};
}

Status OutputDir::publish(std::string_view from, std::string_view to) const {
  const std::string f(from), t(to);
  if (!plain_name(from) || !plain_name(to)) {
    return Error(Errc::io, fmt::format("cannot name {}: {}", path_of(to), std::strerror(EINVAL)),
                 EINVAL);
  }
  if (::linkat(fd_, f.c_str(), fd_, t.c_str(), 0) == 0) {
    ::unlinkat(fd_, f.c_str(), 0);
    return Ok{};
  }
  int err = errno;
  // File systems without hard links: a rename that refuses to replace anything.
  if ((err == EPERM || err == ENOTSUP || err == ENOSYS) &&
      ::renameat2(fd_, f.c_str(), fd_, t.c_str(), RENAME_NOREPLACE) == 0) {
    return Ok{};
  }
  if (err != EEXIST && has(to)) err = EEXIST;
  return Error(Errc::io, fmt::format("cannot name {}: {}", path_of(to), std::strerror(err)), err);
}

Result<OutputDir> OutputDir::make_subdir(std::string_view name, mode_t mode) const {
  const std::string n(name);
  if (!plain_name(name) || ::mkdirat(fd_, n.c_str(), mode) != 0) {
    int err = plain_name(name) ? errno : EINVAL;
    return Error(Errc::io, fmt::format("cannot create {}: {}", path_of(name), std::strerror(err)),
                 err, fmt::format("choose a directory you can write with {} DIR", option_));
  }
  int fd = ::openat(fd_, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return write_error(name, errno);
  OutputDir sub(fd, path_of(name), option_);
  OutputDirOptions o;
  o.option = option_;
  if (auto st = check_directory(fd, sub.path(), o); !st) return std::move(st).error();
  return sub;
}

bool OutputDir::has(std::string_view name) const {
  struct stat st {};
  return ::fstatat(fd_, std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

void OutputDir::remove(std::string_view name) const {
  ::unlinkat(fd_, std::string(name).c_str(), 0);
}

}  // namespace hangscan
