#include "stall_bundle.h"

#include <sys/stat.h>

#include <fmt/core.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <utility>

#include "cli.h"
#include "output.h"
#include "util/escape.h"
#include "util/safe_output.h"
#include "watch/watch_format.h"

namespace hangscan::cli {

std::string log_stall(const std::string& log_file, double stall) {
  if (log_file.empty()) return {};
  struct stat st {};
  if (::stat(log_file.c_str(), &st) != 0) return {};
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  double age = static_cast<double>(now.tv_sec - st.st_mtim.tv_sec) +
               static_cast<double>(now.tv_nsec - st.st_mtim.tv_nsec) / 1e9;
  if (age < stall) return {};
  return fmt::format("{} was not written for {:.0f} s", log_file, age);
}

void print_stall(const std::string& reason, const std::string& dir) {
  // The reason names ranks and their frames, and --log a path: shown escaped (util/escape.h).
  fmt::print("hangscan: stall: {}; capture written to {}\n", escape_for_text(reason),
             escape_for_text(dir));
  std::fflush(stdout);
}

bool output_dir_usable(const std::string& output_dir) {
  auto dir = OutputDir::open(output_dir);
  if (!dir) print_error(dir.error());
  return dir.ok();
}

namespace {

// DIR/stall-TIME, made new: "-2", "-3" ... when two stalls fall in one second.
Result<OutputDir> new_bundle_dir(const OutputDir& parent) {
  std::time_t t = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", std::gmtime(&t));
  const std::string base = fmt::format("stall-{}", stamp);
  auto dir = parent.make_subdir(base);
  for (int i = 2; !dir && dir.error().sys_errno == EEXIST && i < 100; ++i)
    dir = parent.make_subdir(fmt::format("{}-{}", base, i));
  return dir;
}

}  // namespace

Result<std::string> write_stall_bundle(const std::string& output_dir, const std::string& reason,
                                       const JobSnapshot& job, const Analysis& analysis,
                                       const StallTimeline& timeline) {
  auto parent = OutputDir::open(output_dir);
  if (!parent) return std::move(parent).error();
  auto dir = new_bundle_dir(*parent);
  if (!dir) return std::move(dir).error();
  OutputOptions text;
  OutputOptions js;
  js.format = "json";
  OutputOptions html;
  html.format = "html";
  const std::pair<const char*, std::string> files[] = {
      {"report.txt", fmt::format("stall: {}\n\n{}", reason, render_report(job, analysis, text))},
      {"report.json", render_report(job, analysis, js)},
      {"report.html", render_report(job, analysis, html)},
      {"timeline.txt", timeline.text},
      {"timeline.json", timeline.json.dump(2) + "\n"},
      {"timeline.html", watch_html(timeline.json)}};
  for (const auto& [name, content] : files) {
    if (auto st = dir->write_file(name, content); !st) return std::move(st).error();
  }
  return dir->path();
}

}  // namespace hangscan::cli
