#include "target/process_memory.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <string>

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
