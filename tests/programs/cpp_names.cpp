// C++ names for the demangling checks: namespaces, a class template, a member function
// template, an anonymous namespace and an operator, all on one blocked thread.
//
// Usage: cpp_names READY_FD|READY_FIFO
// Thread "hs-cpp" blocks with this stack, innermost first (demangled names):
//   ... pthread_cond_wait / std::condition_variable::wait
//   -> hs::demo::Mailbox<int>::wait_for<hs::demo::Tag>(hs::demo::Tag)  HS-LINE mailbox_wait
//   -> hs::demo::(anonymous namespace)::Runner::operator()()           HS-LINE runner_calls
//   -> ... std::thread internals
// Main ("cpp_names") waits in std::thread::join (HS-LINE main_join).
#include "hs_ready.h"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace hs::demo {

struct Tag {
  int value;
};

template <typename T>
class Mailbox {
 public:
  template <typename K>
  [[gnu::noinline]] T wait_for(K key) {
    std::unique_lock<std::mutex> lock(mu_);
    hs_store(&tid_, hs_gettid());
    hs_store(&parking_, 1);
    while (!ready_) cv_.wait(lock); /* HS-LINE: mailbox_wait */
    return static_cast<T>(key.value);
  }

  int tid_ = 0;
  int parking_ = 0;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;
};

namespace {

struct Runner {
  Mailbox<int>* box;
  [[gnu::noinline]] void operator()() {
    int got = box->wait_for(Tag{7}); /* HS-LINE: runner_calls */
    if (got != 7) std::abort();
  }
};

}  // namespace
}  // namespace hs::demo

int main(int argc, char** argv) {
  static hs::demo::Mailbox<int> box;
  std::thread t(hs::demo::Runner{&box});
  pthread_setname_np(t.native_handle(), "hs-cpp");
  hs_wait_parked(&box.parking_, &box.tid_, SYS_futex);
  hs_say_ready(argc > 1 ? argv[1] : nullptr);
  t.join(); /* HS-LINE: main_join */
  return 0;
}
