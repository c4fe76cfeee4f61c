#include "proc/node_fds.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <system_error>

#include <fmt/format.h>

#include "proc/proc_files.h"
#include "util/parse_number.h"

namespace hangscan {

void scan_fd_table(int pid, NodeFds& into, std::map<int, std::string>* links) {
  DIR* d = ::opendir(fmt::format("/proc/{}/fd", pid).c_str());
  if (!d) {
    if (errno == EACCES || errno == EPERM) into.unreadable.insert(pid);
    return;
  }
  while (dirent* e = ::readdir(d)) {
    auto fd = parse_int<int>(e->d_name);
    if (!fd) continue;
    if (into.scanned >= NodeFds::kMaxFds) break;
    ++into.scanned;
    errno = 0;
    auto link = read_link_at(::dirfd(d), e->d_name);
    if (!link && (errno == EACCES || errno == EPERM)) into.unreadable.insert(pid);
    if (!link) continue;
    if (link->compare(0, 8, "socket:[") == 0 || link->compare(0, 6, "pipe:[") == 0) {
      into.holders[*link].push_back({pid, *fd});
    }
    if (links != nullptr) (*links)[*fd] = std::move(*link);
  }
  ::closedir(d);
}

void scan_fd_tables_besides(const std::set<int>& seen, NodeFds& into,
                            const std::atomic<bool>* cancel) {
  for (int pid : list_pids()) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) break;
    if (!seen.count(pid)) scan_fd_table(pid, into);
  }
}

std::optional<std::size_t> count_node_fds(std::size_t stop_at) {
  struct stat st {};
  // hangscan holds fds itself: a size of 0 is a kernel that does not count them.
  if (::stat("/proc/self/fd", &st) != 0 || st.st_size <= 0) return std::nullopt;
  std::size_t sum = 0;
  for (int pid : list_pids()) {
    if (sum >= stop_at) break;
    if (::stat(fmt::format("/proc/{}/fd", pid).c_str(), &st) == 0 && st.st_size > 0)
      sum += static_cast<std::size_t>(st.st_size);
  }
  return sum;
}

NodeFds scan_node_fds(const std::atomic<bool>* cancel) {
  NodeFds out;
  scan_fd_tables_besides({}, out, cancel);
  return out;
}

NodeFdScan::~NodeFdScan() {
  cancel_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void NodeFdScan::start() {
  if (started()) return;
  try {
    thread_ = std::thread([this] { fds_ = scanner_(&cancel_); });
  } catch (const std::system_error&) {  // no thread: the resolution scans by itself
  }
}

const NodeFds* NodeFdScan::take() {
  if (thread_.joinable()) {
    thread_.join();
  } else if (!taken_) {
    fds_ = scanner_(&cancel_);
  }
  taken_ = true;
  return &fds_;
}

}  // namespace hangscan
