// Whether `hangscan watch` can use its eBPF recorder here, and the fix when it cannot.
//
// Why: eBPF needs four things this binary cannot take for granted: the recorder built in,
// the kernel's BTF (/sys/kernel/btf/vmlinux, for CO-RE), CAP_BPF + CAP_PERFMON (or root), and
// no kernel lockdown in confidentiality mode; and the host's pid namespace (the programs know
// tasks by host pids: Recorder::start refuses elsewhere). `doctor` reports it and `watch` says
// the same line when it falls back to ptrace; the last check loads the recorder, so the answer
// is the kernel's own.
#pragma once

#include <string>

namespace hangscan {

struct EbpfReadiness {
  bool ready = false;
  std::string finding;
  std::string fix;  // empty when ready
};

EbpfReadiness ebpf_readiness();

}  // namespace hangscan
