// The BPF snapshot: a QuietSource (quiet_source.h) built on a sleepable task iterator
// (bpf/snapshot.bpf.c).
//
// Why BPF: only the kernel can read a sleeping thread's user registers (bpf_task_pt_regs)
// without stopping it, and a sleepable iterator may copy its user stack too
// (bpf_copy_from_user_task). The program is loaded once per run (the kernel's BTF is parsed
// and the verifier runs once) and attached as one iterator link per process, limited to that
// process; all of it is owned by file descriptors only: closed on every path, and freed by the
// kernel if hangscan is killed. Needs Linux 5.18+, BTF, and root or CAP_BPF + CAP_PERFMON.
#pragma once

#include <memory>
#include <string>

#include "capture/quiet_source.h"
#include "hangscan/result.h"
#include "watch_events.h"

namespace hangscan {

// Loads the snapshot program; an error says why the quiet path is off (a build without BPF, no
// privilege, a kernel without the iterator or BTF). Each open(pid) attaches its own iterator.
Result<std::shared_ptr<QuietLoader>> load_bpf_snapshot();

// Whether BPF knows processes by the pids hangscan knows them by. Why: BPF programs see a task's
// pids in the host's (initial) pid namespace, hangscan those of its own; in a container with its
// own pid namespace a pid hangscan gives names another task (or none) to BPF, and a wrong pid is
// a wrong frame. The eBPF recorder and the snapshot are off there; the error says why.
Status check_bpf_pid_namespace();

// A thread's registers as the kernel keeps them (struct pt_regs, copied by BPF) in ptrace's
// layout (user_regs_struct), with the thread's fs_base. Why shared: the recorder's samples
// (watch) and the snapshot copy the same struct.
Registers registers_of_pt_regs(const hs_regs& in, std::uint64_t fs_base);

}  // namespace hangscan
