#include "target/seize_reaper.h"

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <system_error>

#include "util/job_control.h"

namespace hangscan {

namespace {

// A seize normally returns in microseconds; one still under way after this waits for an exec.
constexpr std::int64_t kSlowSeizeUs = 2'000;
constexpr auto kLook = std::chrono::milliseconds(1);
constexpr auto kReapWait = std::chrono::milliseconds(100);

bool is_exit(int code) { return code == CLD_EXITED || code == CLD_KILLED || code == CLD_DUMPED; }

}  // namespace

SeizeReaper::SeizeReaper() {
  try {
    thread_ = thread_without_job_control_stops([this] { run(); });
  } catch (const std::system_error&) {  // no thread to be had: seize as before
  }
}

SeizeReaper::~SeizeReaper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SeizeReaper::begin_freeze() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tids_.clear();
    reaped_.clear();
    armed_ = true;
  }
  wake_.notify_all();
}

// The helper finds armed_ false at its next look and sleeps from then on; a reap under way (a
// few non-blocking waitid calls) is waited for, at most kReapWait, so every exit it took is in
// take_reaped().
void SeizeReaper::end_seizes() {
  std::unique_lock<std::mutex> lock(mu_);
  armed_ = false;
  reaped_once_.wait_for(lock, kReapWait, [this] { return !reaping_; });
}

std::int64_t SeizeReaper::now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void SeizeReaper::traced(int tid) {
  std::lock_guard<std::mutex> lock(mu_);
  tids_.push_back(tid);
}

std::vector<ReapedExit> SeizeReaper::take_reaped() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ReapedExit> out;
  out.swap(reaped_);
  return out;
}

void SeizeReaper::run() {
  // No signal is for this thread: job-control stops and terminations go to the tracer's thread,
  // which holds them back while the target is stopped.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (armed_) {
      wake_.wait_for(lock, kLook);
    } else {
      wake_.wait(lock, [this] { return stop_ || armed_; });
      continue;
    }
    if (stop_ || !armed_) continue;
    std::int64_t since = seize_since_us_.load(std::memory_order_relaxed);
    if (since == 0 || now_us() - since < kSlowSeizeUs) continue;
    std::vector<int> tids = tids_;
    reaping_ = true;
    lock.unlock();
    reap(tids);
    lock.lock();
    reaping_ = false;
    reaped_once_.notify_all();
  }
}

// Only exits. For its tracer the kernel reports a tracee's ptrace stops whatever the wait flags
// (WEXITED without WSTOPPED does not hide them), so each state change is first looked at without
// being consumed (WNOWAIT): a stop left in place is the tracer's, which would otherwise never
// see its thread stop (it was lost from the capture and not detached until hangscan exited).
void SeizeReaper::reap(const std::vector<int>& tids) {
  std::vector<ReapedExit> got;
  for (int tid : tids) {
    siginfo_t si{};
    if (waitid(P_PID, static_cast<id_t>(tid), &si, WEXITED | WNOHANG | WNOWAIT | __WALL) != 0)
      continue;
    if (si.si_pid == 0 || !is_exit(si.si_code)) continue;
    siginfo_t gone{};
    if (waitid(P_PID, static_cast<id_t>(tid), &gone, WEXITED | WNOHANG | __WALL) != 0) continue;
    if (gone.si_pid == 0 || !is_exit(gone.si_code)) continue;
    got.push_back(ReapedExit{tid, gone.si_code, gone.si_status});
  }
  if (got.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  reaped_.insert(reaped_.end(), got.begin(), got.end());
}

}  // namespace hangscan
