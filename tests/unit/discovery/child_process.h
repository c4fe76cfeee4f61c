// A target process for the live tests of tests/unit/proc/: started in its own process group,
// it says "ready" on a pipe once it is where the test wants it; the destructor kills the whole
// group and reaps the leader, whatever the test does.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace hangscan {

class Child {
 public:
  // A fork of the test that calls setenv("HS_ENV_TEST", ...) and then says ready.
  static inline const std::vector<std::string> kSetenvFork{};

  // argv: "{ready}" items become the number of the ready pipe's write end; without one the
  // program's stdout is the pipe.
  explicit Child(const std::vector<std::string>& argv) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      alarm(120);
      if (argv.empty()) {
        setenv("HS_ENV_TEST", "set-after-start", 1);
        if (write(fds[1], "ready\n", 6) != 6) _exit(3);
        for (;;) pause();
      }
      int wfd = dup(fds[1]);  // without O_CLOEXEC: inherited by the program
      std::vector<std::string> args = argv;
      bool by_arg = false;
      for (auto& a : args) {
        if (a == "{ready}") {
          a = std::to_string(wfd);
          by_arg = true;
        }
      }
      if (!by_arg) dup2(wfd, 1);
      std::vector<char*> raw;
      for (auto& a : args) raw.push_back(a.data());
      raw.push_back(nullptr);
      execv(raw[0], raw.data());
      _exit(127);
    }
    setpgid(pid_, pid_);  // both sides: no race with the first kill
    close(fds[1]);
    read_fd_ = fds[0];
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      kill(-pid_, SIGKILL);  // the group: ranks and helpers the program started
      waitpid(pid_, nullptr, 0);
    }
    if (read_fd_ >= 0) close(read_fd_);
  }

  int pid() const { return pid_; }

  bool wait_ready(int timeout_ms = 60000) {
    std::string got;
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (got.find("ready\n") == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      end - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) return false;
      pollfd p{read_fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) return false;
      char buf[64];
      ssize_t n = read(read_fd_, buf, sizeof buf);
      if (n <= 0) return false;
      got.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  }

 private:
  int pid_ = -1;
  int read_fd_ = -1;
};

}  // namespace hangscan
