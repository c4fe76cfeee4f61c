// Deep inline chains of the C++ standard library, for the differential test against elfutils.
//
// Usage: cpp_inline_chains READY_FD|READY_FIFO
// Built -O2 (cpp_inline_chains) and -O3 (cpp_inline_chains_O3) from this one source.
// Threads, each started with a lambda through std::thread:
//   "hs-ab", "hs-ba"  deadlocked on two std::mutex taken with std::lock_guard (A then B, B then
//                     A); innermost first: __gthread_mutex_lock (inline) -> std::mutex::lock()
//                     (inline) -> std::lock_guard<std::mutex>::lock_guard (inline) -> the
//                     user's function at HS-LINE ab_second / ba_second
//   "hs-cv"           std::condition_variable::wait with a predicate (HS-LINE cv_wait)
//   "hs-future"       std::future<int>::get() on a promise nobody sets (HS-LINE future_get)
// Main ("cpp_inline_cha") in std::thread::join (HS-LINE main_join).
#include "hs_ready.h"

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace hs::chains {

struct Shared {
  std::mutex a;
  std::mutex b;
  std::mutex cv_mu;
  std::condition_variable cv;
  bool go = false;
  std::promise<int> never;
  int tid[4] = {};
  int parking[4] = {};
  int first_held[2] = {};
};

// Spins until the other thread holds its first mutex (both then block on the second: a sure
// deadlock, not a race).
inline void wait_other(Shared& s, int other) {
  while (!hs_load(&s.first_held[other])) usleep(100);
}

[[gnu::noinline]] void take_ab(Shared& s) {
  std::lock_guard<std::mutex> first(s.a);
  hs_store(&s.first_held[0], 1);
  wait_other(s, 1);
  hs_store(&s.parking[0], 1);
  std::lock_guard<std::mutex> second(s.b); /* HS-LINE: ab_second */
}

[[gnu::noinline]] void take_ba(Shared& s) {
  std::lock_guard<std::mutex> first(s.b);
  hs_store(&s.first_held[1], 1);
  wait_other(s, 0);
  hs_store(&s.parking[1], 1);
  std::lock_guard<std::mutex> second(s.a); /* HS-LINE: ba_second */
}

// A template the compiler inlines into its caller: one more level of the chain.
template <typename Pred>
inline void wait_until(Shared& s, Pred pred) {
  std::unique_lock<std::mutex> lock(s.cv_mu);
  hs_store(&s.parking[2], 1);
  s.cv.wait(lock, pred); /* HS-LINE: cv_wait */
}

[[gnu::noinline]] void cv_waiter(Shared& s) {
  wait_until(s, [&s] { return s.go; }); /* HS-LINE: cv_calls */
}

[[gnu::noinline]] int future_waiter(Shared& s) {
  std::future<int> f = s.never.get_future();
  hs_store(&s.parking[3], 1);
  return f.get(); /* HS-LINE: future_get */
}

}  // namespace hs::chains

int main(int argc, char** argv) {
  using namespace hs::chains;
  static Shared s;
  std::vector<std::thread> threads;
  const char* names[4] = {"hs-ab", "hs-ba", "hs-cv", "hs-future"};
  threads.emplace_back([] { hs_store(&s.tid[0], hs_gettid()); take_ab(s); });
  threads.emplace_back([] { hs_store(&s.tid[1], hs_gettid()); take_ba(s); });
  threads.emplace_back([] { hs_store(&s.tid[2], hs_gettid()); cv_waiter(s); });
  threads.emplace_back([] { hs_store(&s.tid[3], hs_gettid()); (void)future_waiter(s); });
  for (int i = 0; i < 4; ++i) pthread_setname_np(threads[i].native_handle(), names[i]);
  for (int i = 0; i < 4; ++i) hs_wait_parked(&s.parking[i], &s.tid[i], SYS_futex);
  hs_say_ready(argc > 1 ? argv[1] : NULL);
  for (auto& t : threads) t.join(); /* HS-LINE: main_join */
  return 0;
}
