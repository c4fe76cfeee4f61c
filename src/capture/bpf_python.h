// Python frames walked in BPF (bpf/py_frames.bpf.h), on both sides of the kernel boundary: what
// the walker is told about an interpreter, and what its copy of a chain becomes.
//
// Why here, beside the capture sources: the recorder's samples (src/watch) are a capture source
// of their own; the quiet dump's snapshot walked the same chains until it was measured to gain
// nothing by it (docs/design.md, "The quiet path"), and the decoding stayed with the sources.
#pragma once

#include <optional>

#include "hangscan/result.h"
#include "python/python_reader.h"
#include "watch_events.h"

namespace hangscan {

// The walker's description of a Python process (struct hs_py_proc), from its layout; an error
// where the walker cannot read it: a free-threaded build's per-thread bytecode, a frame whose
// fields lie beyond the bytes read at once, a field missing (old versions without offsets).
Result<hs_py_proc> py_proc_of(const python::Located& where);

// The Python frames the walker copied (raw pointers, innermost first); nullopt when the thread
// has no Python thread state. A chain cut short carries why in `error`.
std::optional<python::RawPythonThread> python_of(const hs_py_stack& py);

}  // namespace hangscan
