// libFuzzer entry for the core reader, and the CoreTarget built on it.
//
// Why: a core is untrusted input (a copy cut short, a disk error, a hostile file). Whatever
// the bytes, CoreFile::parse_buffer must return a core or an Error, and a core it accepts
// must survive everything `hangscan core` asks of it before unwinding: describing the
// process and its threads, the module map, the environment walk, and memory reads.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "target/core_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hangscan;
  auto core = CoreFile::parse_buffer(std::vector<std::uint8_t>(data, data + size), "fuzz");
  if (!core.ok()) return 0;
  std::vector<std::uint64_t> probes;
  for (const auto& s : core.value()->segments()) probes.push_back(s.vaddr);
  auto target = make_core_target(std::move(core).value(), CoreOpenOptions{});
  ProcessSnapshot p;
  target->describe_process(p);
  for (int tid : target->thread_ids()) {
    ThreadSnapshot t;
    t.tid = tid;
    target->describe_thread(t);
  }
  (void)target->environment();
  std::uint8_t buf[256];
  for (const auto& m : target->mappings()) {
    (void)target->memory().read(m.start, buf, sizeof(buf));
    (void)target->local_path(m);
  }
  for (auto a : probes) (void)target->memory().read(a - 16, buf, sizeof(buf));
  auto f = target->freeze(Deadline::never());
  if (f.ok()) (void)f.value()->release();
  return 0;
}
