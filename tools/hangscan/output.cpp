#include "output.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <boost/process.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <sstream>

#include <fmt/core.h>

#include "cli.h"
#include "report/graph_writers.h"
#include "report/json_writer.h"
#include "report/text_writer.h"

namespace hangscan::cli {

namespace bp = boost::process;

bool output_wants_color() {
  const char* no = std::getenv("NO_COLOR");
  if (no != nullptr && no[0] != '\0') return false;
  return isatty(STDOUT_FILENO) == 1;
}

void add_output_options(CLI::App* sub, OutputOptions& o) {
  sub->add_flag("--json", o.json, "Write JSON (docs/output-schema.md)");
  sub->add_option("--format", o.format, "Output format")
      ->check(CLI::IsMember({"text", "json", "dot", "svg", "folded"}))
      ->capture_default_str();
  sub->add_option("--threads", o.group_threads, "Threads that identify a rank when grouping")
      ->check(CLI::IsMember({"main", "all", "gil", "matching"}))
      ->capture_default_str();
  sub->add_option("--thread-regex", o.thread_regex, "With --threads matching: thread name regex");
  sub->add_option("--granularity", o.granularity, "When two frames are the same")
      ->check(CLI::IsMember({"function", "line", "pc"}))
      ->capture_default_str();
  sub->add_option("--top", o.top, "Group by the N innermost frames only (0: whole stack)")
      ->check(whole_number("a frame count", 0, 100000));
  sub->add_flag("--main-only", o.main_only, "Text: show only each process's main thread");
}

Result<GroupOptions> group_options(const OutputOptions& o) {
  GroupOptions g;
  if (o.group_threads == "all") g.threads = GroupOptions::Threads::all;
  else if (o.group_threads == "gil") g.threads = GroupOptions::Threads::gil;
  else if (o.group_threads == "matching") g.threads = GroupOptions::Threads::matching;
  if (o.granularity == "line") g.granularity = GroupOptions::Granularity::function_line;
  else if (o.granularity == "pc") g.granularity = GroupOptions::Granularity::pc;
  g.top_n = o.top;
  g.thread_regex = o.thread_regex;
  auto st = validate_group_options(g);
  if (!st) return std::move(st).error();
  return g;
}

std::string render_report(const JobSnapshot& job, const Analysis& analysis, const OutputOptions& o) {
  std::string format = o.json ? "json" : o.format;
  if (format == "json") return write_json(job, &analysis);
  if (format == "dot") return write_dot(job, analysis);
  if (format == "folded") return write_folded(job, analysis.options);
  TextOptions t;
  t.color = o.color;
  t.all_threads = !o.main_only;
  t.width = o.width;
  return write_text(job, &analysis, t);
}

namespace {

// Graphviz renders the DOT tree; absent Graphviz is a clear error, not an empty file.
bool write_svg(const std::string& dot_text) {
  auto dot = bp::search_path("dot");
  if (dot.empty()) {
    print_error("--format svg needs Graphviz's 'dot', which is not installed",
                "apt-get install graphviz, or use --format dot and render it elsewhere");
    return false;
  }
  bp::opstream in;
  bp::child c(dot, "-Tsvg", bp::std_in < in, bp::std_out > stdout);
  in << dot_text;
  in.flush();
  in.pipe().close();
  c.wait();
  return c.exit_code() == 0;
}

}  // namespace

bool write_report(const JobSnapshot& job, const OutputOptions& o) {
  auto g = group_options(o);
  if (!g) {
    print_error(g.error());
    return false;
  }
  Analysis analysis = analyze(job, *g);
  if (o.format == "svg" && !o.json) {
    std::fflush(stdout);
    return write_svg(write_dot(job, analysis));
  }
  OutputOptions shown = o;
  shown.width = stdout_terminal_width();
  std::string text = render_report(job, analysis, shown);
  if (!text.empty() && text.back() != '\n') text += '\n';
  return write_stdout(text);
}

bool write_stdout(const std::string& text) {
  errno = 0;
  bool ok = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
  ok = std::fflush(stdout) == 0 && ok && std::ferror(stdout) == 0;
  if (!ok) {
    int err = errno != 0 ? errno : EIO;
    std::clearerr(stdout);
    print_error(fmt::format("cannot write the report to standard output: {}", std::strerror(err)),
                err == EBADF ? "standard output is closed; redirect it to a file"
                             : "check the free space and where standard output goes; the report was not written");
  }
  return ok;
}

int stdout_terminal_width() {
  if (isatty(STDOUT_FILENO) != 1) return 0;
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) return 0;
  return ws.ws_col;
}

void reserve_standard_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    int got = ::open("/dev/null", fd == 0 || fd == 1 ? O_RDONLY : O_WRONLY);
    if (got >= 0 && got != fd) {
      ::dup2(got, fd);
      ::close(got);
    }
  }
}

int exit_code_for(const JobSnapshot& job) {
  bool captured = false;
  for (const auto& p : job.processes) {
    bool fatal = false;
    for (const auto& d : p.diagnostics) fatal |= d.severity == Diagnostic::Severity::error;
    if (!fatal) captured = true;
  }
  if (!captured) return kExitNothing;
  bool missing = !job.unreachable.empty();
  for (const auto& d : job.diagnostics) missing |= d.severity != Diagnostic::Severity::info;
  for (const auto& p : job.processes) {
    for (const auto& d : p.diagnostics) missing |= d.severity != Diagnostic::Severity::info;
  }
  return missing ? kExitPartial : kExitComplete;
}

}  // namespace hangscan::cli
