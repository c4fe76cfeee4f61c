#include "stall_bundle.h"

#include <sys/stat.h>

#include <fmt/core.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "output.h"

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
  fmt::print("hangscan: stall: {}; capture written to {}\n", reason, dir);
  std::fflush(stdout);
}

Result<std::string> write_stall_bundle(const std::string& output_dir, const std::string& reason,
                                       const JobSnapshot& job, const Analysis& analysis,
                                       const StallTimeline& timeline) {
  std::time_t t = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", std::gmtime(&t));
  std::filesystem::path dir = std::filesystem::path(output_dir) / fmt::format("stall-{}", stamp);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error(Errc::io, fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  OutputOptions text;
  std::ofstream(dir / "report.txt") << "stall: " << reason << "\n\n"
                                    << render_report(job, analysis, text);
  OutputOptions js;
  js.format = "json";
  std::ofstream(dir / "report.json") << render_report(job, analysis, js);
  std::ofstream(dir / "timeline.txt") << timeline.text;
  std::ofstream(dir / "timeline.json") << timeline.json.dump(2) << "\n";
  return dir.string();
}

}  // namespace hangscan::cli
