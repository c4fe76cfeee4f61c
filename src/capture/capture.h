// capture_process(): stop -> copy -> resume -> unwind the copy -> merge (acquire.h + finish.h).
//
// Why: this is the one place that ties a Target (live or core) to the unwinder and the Python
// layer, in the order that keeps the pause short: only registers, stack tops and Python
// frame pointers are read while the target is stopped; unwinding, symbolizing and decoding
// code objects happen after it runs again. It never throws and never gives up on the whole
// process because one thread failed: problems become diagnostics in the snapshot.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hangscan/model.h"
#include "target/target.h"
#include "unwind/symbol_cache.h"
#include "unwind/unwinder.h"

namespace hangscan {

class QuietSession;

struct CaptureOptions {
  UnwinderKind unwinder = UnwinderKind::libdw;
  bool native = true;         // unwind native stacks
  bool python = true;         // read Python frames when the target is Python
  bool merge_native = false;  // --native: interleave native and Python frames
  // A native stack cut short is merged as far as it reaches (python/merge.h merge_cut_stacks)
  // instead of being shown apart: the recorder's samples, whose copies end at 16 KiB.
  bool merge_cut_native = false;
  bool locals = false;       // --locals
  bool nonblocking = false;  // --nonblocking: Python frames without stopping
  // Copy sleeping threads without stopping them where a quiet source opens (quiet_source.h);
  // only the running ones are stopped. dump only (not --no-bpf); off: every thread is stopped.
  bool quiet = false;
  // The run's quiet source, loaded once for every process it captures (quiet_source.h); null:
  // each capture loads its own. Set by start_quiet_session() at the start of a run.
  std::shared_ptr<QuietSession> quiet_session;
  bool kernel_stacks = true;                 // /proc/TID/stack (live, root only)
  std::size_t max_stack_bytes = 512 * 1024;  // per thread, bounded by the stack mapping
  std::chrono::milliseconds freeze_timeout{3000};
  std::vector<std::string>* log = nullptr;  // --verbose lines, when not null
  // Called while the target is stopped, after the copies. Tests only: they kill the target
  // there to check that a death during the capture is reported.
  std::function<void()> while_frozen;
  // Called once the target runs again, before its stacks are unwound, with its threads as
  // described before the stop (state, system call and arguments). Why: the run starts work
  // that needs only these (the node-wide fd scan behind pipe waits, proc/node_fds.h) on a
  // helper thread, so that it overlaps the unwinding instead of following it.
  std::function<void(int pid, const std::vector<const ThreadSnapshot*>& threads)> released;
};

// With options.quiet (and not --nonblocking), starts loading the quiet source now, on a helper
// thread, for every capture made with these options. Why: a run calls it before it looks for
// its processes, so the load (tens of milliseconds) overlaps discovery and is paid once.
void start_quiet_session(CaptureOptions& options);

// Never throws: whatever fails inside one target's capture (bad remote data, a library
// exception) is an error diagnostic of the snapshot it returns, so the caller goes on with
// the other targets.
ProcessSnapshot capture_process(Target& target, const CaptureOptions& options,
                                SymbolCache& symbols);

}  // namespace hangscan
