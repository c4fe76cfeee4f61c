#include "fanout/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/core.h>
#include <boost/process/args.hpp>
#include <boost/process/child.hpp>
#include <boost/process/env.hpp>
#include <boost/process/environment.hpp>
#include <boost/process/exe.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/io.hpp>
#include <boost/process/search_path.hpp>

#include <algorithm>
#include <array>
#include <thread>

#include "util/unique_fd.h"

namespace hangscan {

namespace bp = boost::process;

namespace {

// Reads one pipe into a bounded buffer and, for stdout, hands out complete lines.
struct Stream {
  UniqueFd fd;
  std::string* sink = nullptr;
  std::size_t limit = 0;
  bool* truncated = nullptr;
  const LineHandler* lines = nullptr;
  std::string partial;  // current incomplete line, for the line handler

  bool open() const { return fd.get() >= 0; }

  // Returns false at EOF or on a read error.
  bool read_some() {
    std::array<char, 65536> buf;
    ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (n <= 0) {
      flush_partial();
      fd.reset();
      return false;
    }
    std::string_view chunk(buf.data(), static_cast<std::size_t>(n));
    std::size_t room = limit > sink->size() ? limit - sink->size() : 0;
    sink->append(chunk.substr(0, room));
    if (chunk.size() > room) *truncated = true;
    if (lines != nullptr && *lines) feed_lines(chunk);
    return true;
  }

  void feed_lines(std::string_view chunk) {
    // A line longer than the stdout limit is cut, so the handler's memory is bounded too.
    while (!chunk.empty()) {
      std::size_t nl = chunk.find('\n');
      if (nl == std::string_view::npos) {
        if (partial.size() < limit) partial.append(chunk.substr(0, limit - partial.size()));
        return;
      }
      if (partial.empty()) {
        (*lines)(chunk.substr(0, nl));
      } else {
        partial.append(chunk.substr(0, nl));
        (*lines)(partial);
        partial.clear();
      }
      chunk.remove_prefix(nl + 1);
    }
  }

  void flush_partial() {
    if (lines != nullptr && *lines && !partial.empty()) (*lines)(partial);
    partial.clear();
  }
};

// Reads whatever is ready on the open streams, waiting at most `wait`.
void pump(std::vector<Stream*>& streams, std::chrono::milliseconds wait) {
  std::vector<pollfd> fds;
  std::vector<Stream*> which;
  for (Stream* s : streams) {
    if (!s->open()) continue;
    fds.push_back(pollfd{s->fd.get(), POLLIN, 0});
    which.push_back(s);
  }
  if (fds.empty()) {
    std::this_thread::sleep_for(std::min(wait, std::chrono::milliseconds(20)));
    return;
  }
  int timeout = static_cast<int>(std::clamp<std::int64_t>(wait.count(), 0, 1000));
  int n = ::poll(fds.data(), fds.size(), timeout);
  if (n <= 0) return;
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents != 0) which[i]->read_some();
  }
}

bool all_closed(const std::vector<Stream*>& streams) {
  return std::none_of(streams.begin(), streams.end(), [](const Stream* s) { return s->open(); });
}

// Non-blocking reap; true once the child is gone (status filled in).
bool reap(pid_t pid, CommandResult& result) {
  int status = 0;
  pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r == 0) return false;
  if (r < 0) return errno == ECHILD;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  return true;
}

Result<std::string> resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) != 0) {
      return errno_error(Errc::not_found, fmt::format("cannot execute {}", name));
    }
    return name;
  }
  auto path = bp::search_path(name);
  if (path.empty()) {
    return Error(Errc::not_found, fmt::format("'{}' not found in PATH", name), ENOENT,
                 fmt::format("install {} or put it in PATH", name));
  }
  return path.string();
}

bool word_is_plain(std::string_view w) {
  if (w.empty()) return false;
  return std::all_of(w.begin(), w.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("-_./=:,@%+").find(c) != std::string_view::npos;
  });
}

}  // namespace

std::string shell_quote(std::string_view word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string describe_argv(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += word_is_plain(a) ? a : shell_quote(a);
  }
  return out;
}

Result<CommandResult> run_command(const CommandSpec& spec, const Deadline& deadline,
                                  const LineHandler& on_stdout_line) {
  if (spec.argv.empty()) return Error(Errc::internal, "run_command: empty argv");
  auto program = resolve_program(spec.argv[0]);
  if (!program) return program.error();

  bp::environment env = boost::this_process::environment();
  std::vector<std::string> drop;
  for (const auto& entry : env) {
    const std::string name = entry.get_name();
    bool matches = std::any_of(spec.unset_prefixes.begin(), spec.unset_prefixes.end(),
                               [&](const std::string& p) { return name.rfind(p, 0) == 0; });
    if (matches && std::find(spec.keep.begin(), spec.keep.end(), name) == spec.keep.end()) {
      drop.push_back(name);
    }
  }
  for (const auto& name : drop) env.erase(name);
  for (const auto& [k, v] : spec.set) env[k] = v;

  // Our own pipes with O_CLOEXEC: a pipe end leaking into a child started concurrently by
  // another thread would keep EOF from ever arriving.
  int out_fds[2];
  int err_fds[2];
  if (::pipe2(out_fds, O_CLOEXEC) != 0) return errno_error(Errc::io, "pipe2");
  UniqueFd out_r(out_fds[0]), out_w(out_fds[1]);
  if (::pipe2(err_fds, O_CLOEXEC) != 0) return errno_error(Errc::io, "pipe2");
  UniqueFd err_r(err_fds[0]), err_w(err_fds[1]);
  const int child_out = out_w.get();
  const int child_err = err_w.get();
  const pid_t parent = ::getpid();

  auto started = std::chrono::steady_clock::now();
  std::error_code ec;
  bp::child child(
      bp::exe = *program,
      bp::args = std::vector<std::string>(spec.argv.begin() + 1, spec.argv.end()), env,
      bp::std_in < bp::null,
      bp::extend::on_exec_setup =
          [child_out, child_err, parent](auto&) {
            ::setpgid(0, 0);
            sigset_t
                none;  // a caller reading signals through a signalfd blocks them: not the child
            sigemptyset(&none);
            ::sigprocmask(SIG_SETMASK, &none, nullptr);
            ::prctl(PR_SET_PDEATHSIG, SIGTERM);
            if (::getppid() != parent) ::_exit(127);  // hangscan already died
            ::dup2(child_out, STDOUT_FILENO);
            ::dup2(child_err, STDERR_FILENO);
          },
      ec);
  if (ec) {
    return Error(Errc::io,
                 fmt::format("cannot start {}: {}", describe_argv(spec.argv), ec.message()),
                 ec.value());
  }
  const pid_t pid = child.id();
  child.detach();       // reaped below with waitpid, under our deadline
  ::setpgid(pid, pid);  // also here, so a kill right after the fork reaches the group
  out_w.reset();
  err_w.reset();

  CommandResult result;
  Stream out{std::move(out_r),         &result.out,     spec.max_stdout,
             &result.stdout_truncated, &on_stdout_line, {}};
  Stream err{std::move(err_r), &result.err, spec.max_stderr, &result.stderr_truncated, nullptr, {}};
  std::vector<Stream*> streams{&out, &err};

  bool exited = false;
  while (!deadline.expired()) {
    pump(streams, deadline.remaining());
    if (!exited) exited = reap(pid, result);
    if (exited) break;
  }
  if (exited) {
    // Helpers of the child (srun's, pdsh's ssh) may still hold the pipes for a moment.
    Deadline drain = Deadline::after(spec.drain_after_exit);
    while (!all_closed(streams) && !drain.expired() && !deadline.expired())
      pump(streams, drain.remaining());
    if (!all_closed(streams)) ::kill(-pid, SIGKILL);
  } else {
    result.timed_out = true;
    ::kill(-pid, SIGTERM);
    Deadline grace = Deadline::after(spec.kill_grace);
    while (!exited && !grace.expired()) {
      pump(streams, std::chrono::milliseconds(20));
      exited = reap(pid, result);
    }
    ::kill(-pid, SIGKILL);
    Deadline last = Deadline::after(std::chrono::milliseconds(2000));
    while (!exited && !last.expired()) {
      pump(streams, std::chrono::milliseconds(20));
      exited = reap(pid, result);
    }
  }
  // Whatever is already buffered in the pipes is still worth having.
  for (Stream* s : streams) {
    while (s->open()) {
      pollfd p{s->fd.get(), POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0 || !s->read_some()) break;
    }
    s->flush_partial();
  }
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  return result;
}

}  // namespace hangscan
