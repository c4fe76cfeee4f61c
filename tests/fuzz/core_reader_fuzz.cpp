// libFuzzer entry for the core reader and everything `hangscan core` does with a core.
//
// Why: a core is untrusted input (a copy cut short, a disk error, a hostile file). Whatever
// the bytes, CoreFile::parse_buffer must return a core or an Error, and a core it accepts
// must survive the whole of what `hangscan core` asks of it: describing the process and its
// threads, the module map, the environment walk, memory reads, and then the capture itself
// (unwinding, the Python locator and walk, symbolization, rank facts, the crash explanation).
// capture_process() turns an exception into the snapshot's "internal error" diagnostic so
// that `hangscan core` goes on with the other cores; here such a diagnostic is a finding, so
// the fuzzer aborts on it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "capture/capture.h"
#include "crash/crash_explainer.h"
#include "discovery/discovery.h"
#include "discovery/environ_memory.h"
#include "target/core_target.h"

namespace {

void abort_on_internal_error(const hangscan::ProcessSnapshot& snap) {
  for (const auto& d : snap.diagnostics) {
    if (d.message.find("internal error") != std::string::npos ||
        d.message.find("out of memory") != std::string::npos) {
      std::fprintf(stderr, "capture of a fuzzed core failed: %s\n", d.message.c_str());
      std::abort();
    }
  }
}

void capture_like_hangscan_core(hangscan::Target& target) {
  using namespace hangscan;
  static SymbolCache symbols;  // shared like one `hangscan core` run over many cores
  CaptureOptions copt;
  copt.merge_native = true;
  copt.kernel_stacks = false;
  ProcessSnapshot snap = capture_process(target, copt, symbols);
  abort_on_internal_error(snap);
  apply_rank_info(snap, read_environment(target));
  if (snap.core) snap.core->annotations = explain_crash(target, snap);
}

}  // namespace

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
  capture_like_hangscan_core(*target);
  return 0;
}
