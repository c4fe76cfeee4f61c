#include "stall_bundle.h"

#include <fmt/core.h>

#include <cstdio>

#include "cli.h"
#include "fanout/cluster_files.h"
#include "util/escape.h"

namespace hangscan::cli {

void print_stall(const std::string& reason, const std::string& dir) {
  // The reason names ranks and their frames, and --log a path: shown escaped (util/escape.h).
  fmt::print("hangscan: stall: {}; capture written to {}\n", escape_for_text(reason),
             escape_for_text(dir));
  std::fflush(stdout);
}

bool output_dir_usable(const std::string& output_dir) {
  auto dir = open_run_output_dir(output_dir);
  if (!dir) print_error(dir.error());
  return dir.ok();
}

}  // namespace hangscan::cli
