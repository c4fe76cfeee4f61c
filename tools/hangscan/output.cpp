#include "output.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <boost/process.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <fmt/core.h>

#include "cli.h"
#include "report/report_writers.h"
#include "util/safe_output.h"

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
      ->check(CLI::IsMember(report_format_names()))
      ->capture_default_str();
  sub->add_option("--html", o.html_file,
                  "Also write the HTML report (docs/html-report.md) to FILE");
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
  sub->add_option("--logs", o.logs,
                  "The job's logs (files, directories, globs, .gz): each rank's last line beside "
                  "its stack (docs/logs.md)");
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
  if (auto st = check_group_options(g); !st) return st.error();
  return g;
}

ReportWriter chosen_writer(const OutputOptions& o) {
  auto w = find_report_writer(o.json ? "json" : o.format);
  return w ? *w : *find_report_writer("text");  // --format is checked against the registry
}

RenderOptions render_options(const OutputOptions& o) {
  RenderOptions r;
  r.color = o.color;
  r.all_threads = !o.main_only;
  r.width = o.width;
  return r;
}

namespace {

// Pipes `rendered` through the writer's filter program (Graphviz for svg) to stdout; a missing
// program is a clear error, not an empty file.
bool write_filtered(const ReportWriter& w, const std::string& rendered) {
  auto program = bp::search_path(w.filter.front());
  if (program.empty()) {
    print_error(fmt::format("--format {} needs {}, which is not installed", w.name, w.filter_name),
                w.filter_hint);
    return false;
  }
  std::fflush(stdout);
  bp::opstream in;
  bp::child c(program, bp::args(std::vector<std::string>(w.filter.begin() + 1, w.filter.end())),
              bp::std_in<in, bp::std_out> stdout);
  in << rendered;
  in.flush();
  in.pipe().close();
  c.wait();
  return c.exit_code() == 0;
}

}  // namespace

Result<Analysis> analyze_job(const JobSnapshot& job, const OutputOptions& o) {
  auto g = group_options(o);
  if (!g) {
    print_error(g.error());
    return g.error();
  }
  Analysis a = analyze(job, *g);
  print_log_problems(join_job_logs(job, a, job_logs(o)));
  return a;
}

JobLogs job_logs(const OutputOptions& o) { return JobLogs{o.logs, o.log_texts}; }

void print_log_problems(const std::vector<LogProblem>& problems) {
  for (const LogProblem& p : problems) {
    print_error(fmt::format("--logs: {}: {}", p.path, p.error),
                "name log files, directories or glob patterns that exist and are readable");
  }
}

bool write_report(const JobSnapshot& job, const Analysis& analysis, const OutputOptions& o) {
  ReportWriter w = chosen_writer(o);
  bool ok = false;
  if (!w.filter.empty()) {
    ok = write_filtered(w, w.render(job, analysis, render_options(o)));
  } else {
    OutputOptions shown = o;
    shown.width = stdout_terminal_width();
    std::string text = w.render(job, analysis, render_options(shown));
    if (!text.empty() && text.back() != '\n') text += '\n';
    ok = write_stdout(text);
  }
  if (!o.html_file.empty()) ok &= write_html_file(job, analysis, o.html_file);
  return ok;
}

bool write_html_file(const JobSnapshot& job, const Analysis& analysis, const std::string& file) {
  return write_page_file(find_report_writer("html")->render(job, analysis, {}), file);
}

bool write_page_file(const std::string& page, const std::string& file) {
  std::filesystem::path path(file);
  std::string name = path.filename().string();
  if (name.empty() || name == "." || name == "..") {
    print_error(fmt::format("--html {} names a directory, not a file", file),
                "give the page a file name, e.g. --html report.html");
    return false;
  }
  OutputDirOptions options;
  options.option = "--html";
  auto dir = OutputDir::open(path.has_parent_path() ? path.parent_path().string() : ".", options);
  if (!dir) {
    print_error(dir.error());
    return false;
  }
  auto written = dir->write_file(name, page);
  if (!written) print_error(written.error());
  return written.ok();
}

bool write_stdout(const std::string& text) {
  errno = 0;
  bool ok = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
  ok = std::fflush(stdout) == 0 && ok && std::ferror(stdout) == 0;
  if (!ok) {
    int err = errno != 0 ? errno : EIO;
    std::clearerr(stdout);
    print_error(
        fmt::format("cannot write the report to standard output: {}", std::strerror(err)),
        err == EBADF
            ? "standard output is closed; redirect it to a file"
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
