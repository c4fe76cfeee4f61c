// Files a target names (its Python source files), read as the target itself could read them.
//
// Why: hangscan often runs as root, and the file names it shows text of come from the target's
// memory (a code object's co_filename). Opened as root, any name (a root-only file, a FIFO,
// /dev/zero) would leak text the target cannot read, hang the dump or fill memory. So a
// target's file is opened on a short-lived thread that took the target's file credentials
// (setfsuid/setfsgid and setgroups act on the calling thread only, as raw system calls),
// resolved inside the target's root (openat2 RESOLVE_IN_ROOT: absolute links and ".." stay in
// it, no /proc magic links), read only when it is a regular file, bounded in size and time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "hangscan/result.h"

namespace hangscan {

// The credentials the kernel checks a process's file accesses with: its fsuid, fsgid and
// supplementary groups (the "Uid", "Gid" and "Groups" lines of /proc/PID/status).
struct FileCredentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  bool operator==(const FileCredentials&) const = default;
};

// Parses /proc/PID/status text; nullopt when the Uid or Gid line is missing or malformed.
std::optional<FileCredentials> parse_file_credentials(std::string_view status);
std::optional<FileCredentials> read_file_credentials(int pid);

// When process `pid` started, in nanoseconds since the epoch (its start in ticks after boot,
// placed on the wall clock through CLOCK_BOOTTIME); nullopt when unknown.
std::optional<std::int64_t> process_start_unix_ns(int pid);

// One file to read as a target could.
struct TargetFileRequest {
  std::string root;      // the directory names resolve in ("/proc/PID/root", "/proc/PID/cwd", "/")
  std::string name;      // the target's name for the file, inside `root`
  bool beneath = false;  // a relative name: never leave `root` (no "..", no absolute link)
  std::optional<FileCredentials> as;  // nullopt: hangscan's own credentials
  std::size_t max_bytes = 8 << 20;
  std::chrono::milliseconds timeout{1000};
};

// The text of a regular file and the later of its mtime and ctime (ns since the epoch).
struct TargetFile {
  std::string text;
  std::int64_t changed_ns = 0;
};

// Reads the file. Errors (one line each, no text of the file): Errc::permission (the
// credentials may not read it, or could not be taken), Errc::not_found, Errc::bad_data (not a
// regular file, or larger than max_bytes), Errc::timeout (a stuck file system: the reading
// thread is left to finish on its own), Errc::io.
Result<TargetFile> read_file_as(const TargetFileRequest& request);

// Reads many files as one identity on one thread. Why: a dump reads dozens of a process's
// source files, all with the same credentials; a thread each (read_file_as) cost more than the
// reads. The thread is started at the first read, serves one request at a time with the same
// checks as read_file_as, and is joined when the reader goes (it is idle then: every read
// waited for its answer). A read that times out leaves its thread to finish on its own, and
// the next read starts a fresh one; a request with other credentials is read by read_file_as.
// Reads from several threads are served one at a time (the live targets of a run share one
// reader: the ranks of a job mostly run as one user).
class TargetFileReader {
 public:
  TargetFileReader() = default;
  ~TargetFileReader();
  TargetFileReader(const TargetFileReader&) = delete;
  TargetFileReader& operator=(const TargetFileReader&) = delete;

  Result<TargetFile> read(const TargetFileRequest& request);

  struct Channel;  // shared with the thread

 private:
  void retire();

  std::mutex mu_;  // one read() at a time
  std::shared_ptr<Channel> channel_;
  std::thread worker_;
  std::optional<FileCredentials> as_;  // the credentials `worker_` reads with
};

// A read-only descriptor of `path` when it is a regular file, else -1 (errno EINVAL for
// another file type). Why: paths hangscan opens as itself (a mapping's file through
// /proc/PID/root, a core's NT_FILE path under --sysroot, debug files) can be swapped by the
// target for a FIFO or a device, whose open would block or act; an O_PATH open and fstat come
// first, and only a regular file is opened for reading.
int open_regular_file(const std::string& path);

}  // namespace hangscan
