// The kernel's own core (`gcore --signal`), tested without the CLI on real child processes: only
// core-dumping signals are sent, a process whose core limit is 0 is refused and left running,
// and a signal sent returns where core_pattern puts the core. The children get a core limit too
// small for any core (1 byte), so no core file is made.
#include "corewrite/kernel_core.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace hangscan {
namespace {

// A child parked in pause() with RLIMIT_CORE = `limit`.
pid_t parked_child(rlim_t limit) {
  pid_t pid = ::fork();
  if (pid == 0) {
    rlimit rl{limit, limit};
    ::setrlimit(RLIMIT_CORE, &rl);
    for (;;) ::pause();
  }
  return pid;
}

// Waits (bounded) until /proc/PID/limits shows the child's own limit, i.e. it ran setrlimit.
bool limit_set(pid_t pid, const std::string& value) {
  for (int i = 0; i < 2000; ++i) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/limits");
    std::stringstream text;
    text << f.rdbuf();
    for (std::string line; std::getline(text, line);) {
      if (line.starts_with("Max core file size") &&
          line.find(" " + value + " ") != std::string::npos)
        return true;
    }
    ::usleep(1000);
  }
  return false;
}

TEST(KernelCore, OnlyCoreDumpingSignals) {
  EXPECT_EQ(parse_core_signal("ABRT").value().number, SIGABRT);
  EXPECT_EQ(parse_core_signal("SIGQUIT").value().name, "QUIT");
  EXPECT_EQ(parse_core_signal("SEGV").value().number, SIGSEGV);
  auto term = parse_core_signal("TERM");
  ASSERT_FALSE(term.ok());
  EXPECT_EQ(term.error().code, Errc::usage);
  EXPECT_EQ(term.error().what(), "--signal TERM: not a core-dumping signal hangscan sends");
}

TEST(KernelCore, ZeroCoreLimitIsRefusedAndTheProcessRunsOn) {
  pid_t pid = parked_child(0);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(limit_set(pid, "0"));
  auto r = send_core_signal(pid, parse_core_signal("ABRT").value());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::unsupported);
  EXPECT_EQ(r.error().hint,
            "raise it first: prlimit --pid " + std::to_string(pid) + " --core=unlimited");
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, WNOHANG), 0);  // still running
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
}

TEST(KernelCore, SignalSentSaysWhereTheCoreGoes) {
  pid_t pid = parked_child(1);  // below one page: the kernel writes no core
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(limit_set(pid, "1"));
  auto r = send_core_signal(pid, parse_core_signal("SIGABRT").value());
  ASSERT_TRUE(r.ok()) << r.error().what();
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
  std::ifstream f("/proc/sys/kernel/core_pattern");
  std::string pattern;
  std::getline(f, pattern);
  EXPECT_EQ(r.value(), pattern);
}

}  // namespace
}  // namespace hangscan
