// Watchdog: the one judge of `watch --stall`, on one machine and across a Slurm job's nodes,
// and the bundle it leaves when it fires.
//
// Why one: both watchdogs fire for the same two reasons (no rank made progress for the stall
// time; the job's --log was not written for as long), once per stall, and fire again only
// after progress (or after the log was written again). The watch loops (watch_session.h,
// cluster_session.h) only observe; this class decides, so the two cannot drift apart. And
// both must leave the same files (report.txt with the reason first, report.json as `dump
// --json`, report.html; timeline.txt, timeline.json and timeline.html as `watch` writes them:
// docs/html-report.md), so a reader or a script finds one layout whichever watchdog wrote it.
// Both sets come from the writer registries (report/report_writers.h, watch/watch_writers.h).
#pragma once

#include <optional>
#include <string>

#include "group/analysis.h"
#include "hangscan/model.h"
#include "hangscan/result.h"
#include "watch/watch_writers.h"

namespace hangscan {

// "FILE was not written for N s" when `log_file` was last written `stall_s` seconds ago or
// more, else "" (also when it is not given or cannot be read): the io-watchdog criterion.
std::string log_stall(const std::string& log_file, double stall_s);

// What the loop saw of its ranks, on the loop's own clock (any clock, used consistently).
struct ProgressView {
  bool stalled = false;          // no rank made progress for the stall time (or all ended)
  double quiet_s = 0;            // for how long (for the reason's words)
  std::optional<double> newest;  // the newest progress seen; none: none in these windows
};

class Watchdog {
 public:
  // `scope` words the progress reason: "watched rank", "rank on any node".
  Watchdog(double stall_s, std::string log_file, std::string scope)
      : stall_s_(stall_s), log_file_(std::move(log_file)), scope_(std::move(scope)) {}

  double stall_s() const { return stall_s_; }

  // The stale log's reason when it would fire now, else "" (re-arms once the log is fresh).
  // Why apart: the cluster loop ends every node's window as soon as the log goes stale.
  std::string log_reason();

  // True when judge() would fire on `seen` (a loop may look closer before it judges).
  bool would_fire(const ProgressView& seen);

  // Why to capture now ("" when not): at most once per stall; again after progress newer than
  // the last firing (`now`, on the loop's clock) or after the log was written again.
  std::string judge(const ProgressView& seen, double now);

 private:
  bool progressed_since_fired(const ProgressView& seen) const {
    return !fired_at_ || seen.newest.value_or(-1) > *fired_at_;
  }

  double stall_s_;
  std::string log_file_;
  std::string scope_;
  bool log_armed_ = true;
  std::optional<double> fired_at_;
};

// Creates OUTPUT_DIR/stall-YYYYMMDDTHHMMSS/ new (mode 0755; "-2", "-3" ... when taken) through
// the checked OUTPUT_DIR (util/safe_output.h) and writes the six files in it; returns its path.
Result<std::string> write_stall_bundle(const std::string& output_dir, const std::string& reason,
                                       const JobSnapshot& job, const Analysis& analysis,
                                       const WatchDocument& timeline);

}  // namespace hangscan
