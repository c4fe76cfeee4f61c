// A C++ program whose worker thread throws an exception nobody catches: std::terminate, then
// abort() and SIGABRT. For `hangscan core` tests of the uncaught-exception explanation.
//
// Usage: crash_throw READY   says "ready" (hs_ready.h) right before the worker throws; the
// main thread waits in join().
#include <stdexcept>
#include <string>
#include <thread>

#include "hs_ready.h"

namespace {

const char* ready_to = nullptr;

__attribute__((noinline)) void load_shard(int shard) {
  hs_say_ready(ready_to);
  throw std::runtime_error("bad shard " + std::to_string(shard));  // HS-LINE: throw
}

__attribute__((noinline)) void worker_main() { load_shard(7); }

}  // namespace

int main(int argc, char** argv) {
  ready_to = argc > 1 ? argv[1] : nullptr;
  std::thread worker(worker_main);
  worker.join();  // HS-LINE: join
  return 0;
}
