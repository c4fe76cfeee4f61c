#include "watchdog/watchdog.h"

#include <sys/stat.h>

#include <fmt/core.h>

#include <ctime>

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

}  // namespace hangscan
