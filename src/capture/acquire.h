// acquire_process(): the half of a capture that needs the process itself.
//
// Why: this is the only part of a capture that runs while the target is stopped, so it does
// nothing else: it describes the threads (before the stop: their states and wait channels are
// then the program's, not ptrace-stop), freezes, copies registers, stack tops and the Python
// frame chains' raw pointers into prefaulted memory, and releases. What it got is a plain
// ProcessCopy; finish_process() (finish.h) does the slow work after the target runs again.
#pragma once

#include "capture/capture.h"
#include "capture/finish.h"
#include "target/target.h"

namespace hangscan {

// Never leaves a thread stopped (the freeze is RAII). May throw on bad remote data; a failed
// freeze is not thrown but returned as a copy of descriptions with an error diagnostic.
// capture_process() = acquire_process() then finish_process(), with failures contained.
ProcessCopy acquire_process(Target& target, const CaptureOptions& options);

}  // namespace hangscan
