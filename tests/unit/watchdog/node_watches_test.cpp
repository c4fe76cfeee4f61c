// signal_node_watches(): `watch --end-window --node POD` as a library call. A child runs this
// test binary as a node-local watch of pod-a would run hangscan (--node-local --node pod-a),
// SIGUSR1 blocked; only it is told, and only for its own node.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "watchdog/k8s_watches.h"

namespace hangscan {
namespace {

// The child's side: runs only when the parent starts it (HS_NODE_WATCH_CHILD=FD of its pipe).
TEST(SignalNodeWatches, Child) {
  const char* fd = std::getenv("HS_NODE_WATCH_CHILD");
  if (fd == nullptr) GTEST_SKIP() << "the child of SignalNodeWatches.ToldOnlyForItsNode";
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_BLOCK, &usr1, nullptr);
  // A signalfd, not sigtimedwait: that one unblocks the signal while it waits (SigBlk: 0).
  int sfd = ::signalfd(-1, &usr1, SFD_CLOEXEC);
  ASSERT_GE(sfd, 0);
  ASSERT_EQ(::write(std::atoi(fd), "ready\n", 6), 6);
  pollfd p{sfd, POLLIN, 0};
  ::_exit(::poll(&p, 1, 20000) == 1 ? 0 : 3);
}

TEST(SignalNodeWatches, ToldOnlyForItsNode) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    std::string fd = std::to_string(ready[1]);
    ::setenv("HS_NODE_WATCH_CHILD", fd.c_str(), 1);
    ::execl("/proc/self/exe", "hs_watchdog_tests", "--gtest_filter=SignalNodeWatches.Child",
            "--node-local", "--node", "pod-a", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(ready[1]);
  char line[6];
  ASSERT_EQ(::read(ready[0], line, sizeof line), 6);
  ::close(ready[0]);
  EXPECT_EQ(signal_node_watches("pod-b"), 0u);
  EXPECT_EQ(signal_node_watches("pod-a"), 1u);
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (::waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace hangscan
