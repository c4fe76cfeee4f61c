// CaptureFlags: the capture choices a user makes on the command line, parsed once.
//
// Why: `dump`, `core`, the node agent and the two fan-out front ends take the same capture
// flags; the front ends also forward them to every agent. One struct holds them, one function
// turns them into CaptureOptions and one into agent arguments, so a new flag is added once
// and means the same in every mode.
#pragma once

#include <string>
#include <vector>

#include "capture/capture.h"

namespace hangscan {

struct CaptureFlags {
  std::string unwinder = "libdw";  // --unwinder libdw | libunwind
  bool native = false;             // --native: interleave native and Python frames (live)
  bool python_only = false;        // --python-only: no interleaving (cores interleave by default)
  bool locals = false;             // --locals
  bool nonblocking = false;        // --nonblocking (live)
  bool no_python = false;          // --no-python
  bool no_bpf = false;             // --no-bpf (live): stop every thread with ptrace
};

// --no-bpf or HANGSCAN_NO_BPF=1 (tests compare both paths on one machine): no quiet path.
// The one place both are read, so dump, the agent and the front ends that forward the choice
// to their agents agree.
bool quiet_path_refused(const CaptureFlags& flags);

// Live processes (dump, agent): native frames are interleaved only with --native; blocked
// threads are copied without a stop (CaptureOptions::quiet) unless quiet_path_refused().
CaptureOptions live_capture_options(const CaptureFlags& flags);

// Cores: native and Python frames interleaved unless --python-only; no kernel stacks.
CaptureOptions core_capture_options(const CaptureFlags& flags);

// The live flags as `hangscan agent` arguments, for the fan-out front ends (--no-bpf also when
// only HANGSCAN_NO_BPF=1 said it: pdsh and ssh do not carry the environment to the nodes).
std::vector<std::string> capture_flag_args(const CaptureFlags& flags);

}  // namespace hangscan
