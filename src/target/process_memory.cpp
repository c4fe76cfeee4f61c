#include "target/process_memory.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

namespace hangscan {

ProcessMemory::ProcessMemory(int pid) : pid_(pid) {}

ProcessMemory::~ProcessMemory() {
  if (mem_fd_ >= 0) ::close(mem_fd_);
}

std::size_t ProcessMemory::read(std::uint64_t addr, void* buf, std::size_t len) {
  if (len == 0) return 0;
  if (vm_readv_works_) {
    std::size_t done = 0;
    auto* out = static_cast<char*>(buf);
    while (done < len) {
      iovec local{out + done, len - done};
      iovec remote{reinterpret_cast<void*>(addr + done), len - done};
      ssize_t n = ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
      if (n > 0) {
        done += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == ENOSYS || errno == EPERM) && done == 0) {
        vm_readv_works_ = false;
        return read_proc_mem(addr, buf, len);
      }
      // A partial read stops at the first unreadable page: retry page by page up to it.
      if (done == 0 && len > 4096) {
        std::size_t to_page = 4096 - (addr % 4096);
        std::size_t first = read(addr, buf, to_page);
        if (first < to_page) return first;
        return first + read(addr + to_page, out + to_page, len - to_page);
      }
      break;
    }
    return done;
  }
  return read_proc_mem(addr, buf, len);
}

void ProcessMemory::read_many(std::span<ReadOp> ops) {
  constexpr std::size_t kMaxIov = 1024;  // IOV_MAX on Linux
  std::vector<iovec> local;
  std::vector<iovec> remote;
  std::size_t i = 0;
  while (i < ops.size()) {
    if (!vm_readv_works_) {
      for (; i < ops.size(); ++i) ops[i].got = read(ops[i].addr, ops[i].buf, ops[i].len);
      return;
    }
    std::size_t n = std::min(kMaxIov, ops.size() - i);
    local.clear();
    remote.clear();
    for (std::size_t k = i; k < i + n; ++k) {
      local.push_back(iovec{ops[k].buf, ops[k].len});
      remote.push_back(iovec{reinterpret_cast<void*>(ops[k].addr), ops[k].len});
    }
    ssize_t r = ::process_vm_readv(pid_, local.data(), n, remote.data(), n, 0);
    if (r < 0 && errno == EINTR) continue;
    // The kernel stops at the first read that fails; everything before it is complete.
    std::size_t left = r > 0 ? static_cast<std::size_t>(r) : 0;
    std::size_t k = i;
    for (; k < i + n && left >= ops[k].len; ++k) {
      ops[k].got = ops[k].len;
      left -= ops[k].len;
    }
    if (k == i + n) {
      i = k;
      continue;
    }
    // The failing read alone, page by page (read() also falls back to /proc/PID/mem).
    ops[k].got = left + read(ops[k].addr + left, ops[k].buf + left, ops[k].len - left);
    i = k + 1;
  }
}

std::size_t ProcessMemory::read_proc_mem(std::uint64_t addr, void* buf, std::size_t len) {
  if (mem_fd_ < 0) {
    std::string path = "/proc/" + std::to_string(pid_) + "/mem";
    mem_fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (mem_fd_ < 0) return 0;
  }
  std::size_t done = 0;
  auto* out = static_cast<char*>(buf);
  while (done < len) {
    ssize_t n = ::pread(mem_fd_, out + done, len - done, static_cast<off_t>(addr + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

}  // namespace hangscan
