// The node-wide fd scan through BPF (capture/bpf_fd_holders.h) finds exactly what the /proc
// scan finds: on a real pipe held by three processes (this one and two children, each end in
// a different place), the same holders, pid by pid and fd by fd, and the same unreadable tables.
// Skipped where BPF cannot be loaded (not root, a kernel without the iterator): there the run scans
// /proc anyway.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "capture/bpf_fd_holders.h"

namespace hangscan {
namespace {

// A child that keeps `keep` of the pipe open (closing the other end) until `hold` is closed.
pid_t holder(const int pipe_fds[2], int keep, const int hold[2], const int ready[2]) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::close(pipe_fds[1 - keep]);
  ::close(hold[1]);
  ::close(ready[0]);
  char c = 'r';
  if (::write(ready[1], &c, 1) != 1) ::_exit(1);
  ::close(ready[1]);
  while (::read(hold[0], &c, 1) > 0) {
  }
  ::_exit(0);
}

std::vector<std::pair<int, int>> holders_of(const NodeFds& fds, const std::string& link) {
  std::vector<std::pair<int, int>> out;
  auto it = fds.holders.find(link);
  if (it == fds.holders.end()) return out;
  for (const FdHolder& h : it->second) out.emplace_back(h.pid, h.fd);
  return out;
}

TEST(BpfFdHolders, SameHoldersAsTheProcScanOnAPipeOfThreeProcesses) {
  auto probe = scan_node_fds_bpf();
  if (!probe) GTEST_SKIP() << probe.error().message;
  int p[2], hold[2], ready[2];
  ASSERT_EQ(::pipe(p), 0);
  ASSERT_EQ(::pipe(hold), 0);
  ASSERT_EQ(::pipe(ready), 0);
  pid_t writer = holder(p, 1, hold, ready);
  pid_t reader = holder(p, 0, hold, ready);
  ASSERT_GT(writer, 0);
  ASSERT_GT(reader, 0);
  ::close(hold[0]);
  ::close(ready[1]);
  char c[2];
  ASSERT_EQ(::read(ready[0], c, 1) + ::read(ready[0], c + 1, 1), 2);  // both hold their end
  ::close(ready[0]);

  struct stat st {};
  ASSERT_EQ(::fstat(p[0], &st), 0);
  const std::string link = "pipe:[" + std::to_string(st.st_ino) + "]";
  NodeFds by_proc = scan_node_fds();
  auto by_bpf = scan_node_fds_bpf();
  ::close(hold[1]);  // the children end
  for (pid_t child : {writer, reader}) ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(by_bpf) << by_bpf.error().message;

  const int self = ::getpid();
  std::vector<std::pair<int, int>> expected = {{self, p[0]}, {self, p[1]}};
  expected.push_back({std::min(writer, reader), writer < reader ? p[1] : p[0]});
  expected.push_back({std::max(writer, reader), writer < reader ? p[0] : p[1]});
  EXPECT_EQ(holders_of(by_proc, link), expected);
  EXPECT_EQ(holders_of(*by_bpf, link), expected);
  EXPECT_EQ(by_bpf->unreadable, by_proc.unreadable);  // a table BPF did not see is read by /proc
  EXPECT_GT(by_bpf->scanned, 0u);
  ::close(p[0]);
  ::close(p[1]);
}

}  // namespace
}  // namespace hangscan
