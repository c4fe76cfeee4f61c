#include "corewrite/member_core.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>

#include "corewrite/core_writer.h"
#include "proc/proc_files.h"
#include "util/hints.h"

namespace hangscan {

CoreOutcome write_member_core(const CoreRequest& r, const std::string& dir, std::uint64_t max_size,
                              const Deadline& deadline, const std::string& dir_option) {
  using namespace std::chrono_literals;
  CoreOutcome c;
  c.node = r.node;
  c.pid = r.pid;
  c.rank = r.rank;
  CoreWriteOptions opts;
  opts.dir = dir;
  opts.dir_option = dir_option;
  opts.create_dir = true;  // mode 0700: cores hold secrets
  opts.max_size = max_size;
  opts.rank = r.rank;
  opts.host = r.node;
  opts.freeze_timeout = std::clamp<std::chrono::milliseconds>(deadline.remaining(), 1ms, 3000ms);
  auto w = write_core_detailed(r.pid, opts);
  if (!w) {
    c.error = w.error().what();
    c.hint = w.error().hint;
    return c;
  }
  c.path = w->path;
  c.file_size = w->file_size;
  c.pause_us = w->pause_us;
  c.warnings = w->warnings;
  if (!c.rank) c.rank = w->rank;
  return c;
}

std::optional<Error> pid_reused(int pid, std::uint64_t start_ticks, const std::string& proc_root) {
  if (start_ticks == 0) return std::nullopt;
  auto stat_text = read_text_file(fmt::format("{}/{}/stat", proc_root, pid), 4096);
  auto stat = stat_text ? parse_stat(*stat_text) : std::nullopt;
  if (!stat || stat->start_time == start_ticks) return std::nullopt;  // gone: the writer says so
  return Error(
      Errc::not_found,
      fmt::format(
          "pid {} is another process now (started at tick {}, the captured one at tick {}): "
          "not dumped (the pid was reused)",
          pid, stat->start_time, start_ticks),
      0, hints::fresh_report());
}

std::vector<CoreOutcome> write_local_cores(const JobSnapshot& job, const PickedCores& picked,
                                           const std::string& dir, std::uint64_t max_size) {
  std::vector<CoreOutcome> out;
  for (std::size_t i : picked.members) {
    const ProcessSnapshot& p = job.processes[i];
    CoreRequest r{p.host.empty() ? local_host_name() : p.host, p.pid, p.rank, p.start_ticks};
    // The agents check this in refuse_core_request(); here the capture was this process's.
    if (auto reused = pid_reused(r.pid, r.start_ticks)) {
      out.push_back(CoreOutcome{.node = r.node,
                                .pid = r.pid,
                                .rank = r.rank,
                                .error = reused->what(),
                                .hint = reused->hint});
      continue;
    }
    out.push_back(write_member_core(r, dir, max_size, Deadline::never()));
  }
  return out;
}

}  // namespace hangscan
