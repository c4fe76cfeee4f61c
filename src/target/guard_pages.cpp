#include "target/guard_pages.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <string>

#include "target/memory_reader.h"
#include "util/unique_fd.h"

namespace hangscan {

namespace {

constexpr std::uint64_t kGuardBit = 1ULL << 58;  // PM_GUARD_REGION
constexpr std::size_t kEntriesPerRead = 512;     // one pagemap read covers 2 MiB

void add_page(std::vector<std::pair<std::uint64_t, std::uint64_t>>& runs, std::uint64_t page) {
  if (!runs.empty() && runs.back().second == page) {
    runs.back().second = page + kPageSize;
  } else {
    runs.emplace_back(page, page + kPageSize);
  }
}

}  // namespace

std::vector<std::pair<std::uint64_t, std::uint64_t>> guard_pages(int pid, std::uint64_t start,
                                                                 std::uint64_t end) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> runs;
  std::string path = "/proc/" + std::to_string(pid) + "/pagemap";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) return runs;
  std::array<std::uint64_t, kEntriesPerRead> entries{};
  for (std::uint64_t page = start / kPageSize * kPageSize; page < end;) {
    std::uint64_t want =
        std::min<std::uint64_t>(kEntriesPerRead, (end - page + kPageSize - 1) / kPageSize);
    ssize_t n = ::pread(fd.get(), entries.data(), want * sizeof(std::uint64_t),
                        static_cast<off_t>(page / kPageSize * sizeof(std::uint64_t)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    auto got = static_cast<std::uint64_t>(n) / sizeof(std::uint64_t);
    for (std::uint64_t i = 0; i < got; ++i) {
      if ((entries[i] & kGuardBit) != 0) add_page(runs, page + i * kPageSize);
    }
    page += got * kPageSize;
  }
  return runs;
}

}  // namespace hangscan
