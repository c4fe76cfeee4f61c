// A C++ program whose worker thread throws an exception nobody catches: std::terminate, then
// abort() and SIGABRT. For `hangscan core` tests of the uncaught-exception explanation.
//
// Usage: crash_throw [READY_FD]   writes "ready\n" to READY_FD (default 1) just before throwing.
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

int ready_fd = 1;

__attribute__((noinline)) void load_shard(int shard) {
  if (write(ready_fd, "ready\n", 6) != 6) _exit(3);
  throw std::runtime_error("bad shard " + std::to_string(shard));  // THROW_LINE
}

__attribute__((noinline)) void worker_main() { load_shard(7); }

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) ready_fd = std::atoi(argv[1]);
  std::thread worker(worker_main);
  worker.join();  // JOIN_LINE
  return 0;
}
