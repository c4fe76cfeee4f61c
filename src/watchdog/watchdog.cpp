#include "watchdog/watchdog.h"

#include <sys/stat.h>

#include <fmt/core.h>

#include <cerrno>
#include <ctime>
#include <utility>
#include <vector>

#include "report/report_writers.h"
#include "util/safe_output.h"

namespace hangscan {

std::string log_stall(const std::string& log_file, double stall_s) {
  if (log_file.empty()) return {};
  struct stat st {};
  if (::stat(log_file.c_str(), &st) != 0) return {};
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  double age = static_cast<double>(now.tv_sec - st.st_mtim.tv_sec) +
               static_cast<double>(now.tv_nsec - st.st_mtim.tv_nsec) / 1e9;
  if (age < stall_s) return {};
  return fmt::format("{} was not written for {:.0f} s", log_file, age);
}

std::string Watchdog::log_reason() {
  std::string reason = log_stall(log_file_, stall_s_);
  if (reason.empty()) log_armed_ = true;
  return log_armed_ ? reason : std::string();
}

bool Watchdog::would_fire(const ProgressView& seen) {
  return !log_reason().empty() || (seen.stalled && progressed_since_fired(seen));
}

std::string Watchdog::judge(const ProgressView& seen, double now) {
  if (std::string log = log_reason(); !log.empty()) {
    log_armed_ = false;
    fired_at_ = now;
    return log;
  }
  if (!seen.stalled || !progressed_since_fired(seen)) return {};
  fired_at_ = now;
  return fmt::format("no {} made progress for {:.0f} s", scope_, seen.quiet_s);
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
                                       const WatchDocument& timeline) {
  auto parent = OutputDir::open(output_dir);
  if (!parent) return std::move(parent).error();
  auto dir = new_bundle_dir(*parent);
  if (!dir) return std::move(dir).error();
  std::vector<std::pair<std::string, std::string>> files;
  for (const char* name : {"text", "json", "html"}) {
    auto w = find_report_writer(name);
    std::string body = w->render(job, analysis, RenderOptions{});
    if (w->name == "text") body = fmt::format("stall: {}\n\n{}", reason, body);
    files.emplace_back("report." + w->extension, std::move(body));
  }
  for (const auto& w : watch_writers())
    files.emplace_back("timeline." + w.extension, w.render(timeline));
  for (const auto& [name, content] : files) {
    if (auto st = dir->write_file(name, content); !st) return std::move(st).error();
  }
  return dir->path();
}

}  // namespace hangscan
