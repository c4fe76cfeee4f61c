// The recorder without eBPF: on-CPU samples taken by stopping the process with ptrace.
//
// Why: where eBPF is not allowed (no CAP_BPF/CAP_PERFMON, no BTF, a container), `watch` still
// tells where each rank spends its CPU, at a low rate: each sample stops every thread of the
// process for about a millisecond (the `dump` freeze), copies the registers and 16 KiB of stack
// of the threads that were running, and lets them go; the copies go through the same finish
// stage as the eBPF samples. It records no waits, signals or exits (those need the kernel's
// tracepoints); exits show as processes that vanished.
#pragma once

#include <memory>

#include "watch/recorder.h"

namespace hangscan {

// Samples per second of the fallback: at 2 Hz a process is stopped ~2 ms per second (0.2%).
inline constexpr int kPtraceFallbackHz = 2;

std::unique_ptr<Recorder> make_ptrace_recorder(const RecorderOptions& options);

}  // namespace hangscan
