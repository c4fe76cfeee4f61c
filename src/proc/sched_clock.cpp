#include "proc/sched_clock.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "proc/proc_files.h"
#include "util/parse_number.h"

namespace hangscan {

namespace {

constexpr std::string_view kExecStart = "se.exec_start";
constexpr int kSamples = 5;

// One sample on the CPU the calling thread is pinned to: wake up from a short sleep (the
// scheduler stamps exec_start when it picks the thread), read our own record, then the clock.
// Reading the record first keeps the sample an upper bound of the true offset.
std::optional<double> sample_offset() {
  timespec nap{0, 20'000};
  nanosleep(&nap, nullptr);
  auto text = read_text_file("/proc/thread-self/sched", 1 << 14);
  double now = RunQueueClock::monotonic_ms();
  if (!text) return std::nullopt;
  auto exec = parse_exec_start_ms(*text);
  if (!exec) return std::nullopt;
  return now - *exec;
}

std::optional<double> measure_on(int cpu) {
  std::optional<double> best;
  try {
    std::thread worker([&] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      if (sched_setaffinity(0, sizeof(set), &set) != 0) return;
      for (int i = 0; i < kSamples; ++i) {
        auto s = sample_offset();
        if (s && (!best || *s < *best)) best = s;
      }
    });
    worker.join();
  } catch (const std::system_error&) {
    // No thread to be had (a memory or thread limit): the offset is unknown, not an error.
  }
  return best;
}

}  // namespace

namespace {

// The value of `key` in a sched file ("key   :   value" on a line of its own), up to the next
// blank; empty when the file has no such line.
std::string_view sched_value(std::string_view text, std::string_view key) {
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with(key)) continue;
    line.remove_prefix(key.size());
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (!line.starts_with(':')) continue;  // another key that starts alike
    line.remove_prefix(1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    return line.substr(0, line.find_first_of(" \t"));
  }
  return {};
}

}  // namespace

std::optional<double> parse_exec_start_ms(std::string_view text) {
  std::string_view v = sched_value(text, kExecStart);
  if (v.empty() || v.size() > 32) return std::nullopt;
  for (char c : v) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return std::nullopt;
  }
  auto ms = parse_finite_double(v);
  if (!ms || *ms < 0) return std::nullopt;
  return ms;
}

std::optional<std::uint64_t> parse_nr_switches(std::string_view text) {
  return parse_int<std::uint64_t>(sched_value(text, "nr_switches"));
}

double RunQueueClock::monotonic_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

std::optional<double> RunQueueClock::any_offset() {
  for (const auto& [cpu, off] : offsets_) {
    if (off) return off;
  }
  // Nothing measured yet: the CPU we run on now is one we may run on.
  int here = sched_getcpu();
  if (here < 0) return std::nullopt;
  auto off = measure_on(here);
  offsets_[here] = off;
  return off;
}

std::optional<double> RunQueueClock::offset_ms(int cpu) {
  std::lock_guard lock(mu_);
  if (cpu < 0 || cpu >= CPU_SETSIZE) return any_offset();
  auto it = offsets_.find(cpu);
  if (it == offsets_.end()) it = offsets_.emplace(cpu, measure_on(cpu)).first;
  if (it->second) return it->second;
  return any_offset();
}

std::optional<double> RunQueueClock::seconds_since(double exec_start_ms, int cpu, double now_ms) {
  auto off = offset_ms(cpu);
  if (!off) return std::nullopt;
  double ms = now_ms - *off - exec_start_ms;
  // The offset is an upper bound (within microseconds): a thread that stopped a moment ago
  // can come out a hair below zero.
  return std::max(0.0, ms) / 1e3;
}

ThreadSched read_thread_sched(RunQueueClock& clock, int pid, int tid, char state, int cpu) {
  ThreadSched out;
  if (state == 'R' || state == '?' || state == 'Z' || state == 'X') return out;
  auto text = read_text_file(fmt::format("/proc/{}/task/{}/sched", pid, tid), 1 << 14);
  double now = RunQueueClock::monotonic_ms();
  if (!text) return out;
  out.switches = parse_nr_switches(*text);
  auto exec = parse_exec_start_ms(*text);
  if (!exec || *exec == 0) return out;
  if (auto s = clock.seconds_since(*exec, cpu, now))
    out.blocked_s = std::round(*s * 1000.0) / 1000.0;
  return out;
}

}  // namespace hangscan
