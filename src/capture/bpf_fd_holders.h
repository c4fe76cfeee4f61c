// The node-wide fd scan (proc/node_fds.h) made by a BPF task_file iterator (bpf/fd_holders.bpf.c).
//
// Why: the scan behind "only this process holds its write end" and behind naming the process
// at the other end of a pipe or socket reads every fd table of the node; through /proc that is
// one readlink per fd of the machine (3.4 ms of a 50-thread dump, 94% of it in the kernel).
// The iterator visits the same tables in one pass and writes only the pipes and sockets. The
// result is the /proc scan's: the same holders by link, sorted by pid and fd; a table the
// iterator did not visit is read through /proc (and is unreadable where /proc refuses it). The
// program is loaded, run once and closed within the call: nothing of it outlives the scan. Needs
// root (or CAP_BPF + CAP_PERFMON), Linux 5.17+ with BTF, and hangscan in the host's pid namespace;
// the error says which failed, and the caller scans /proc instead.
#pragma once

#include "hangscan/result.h"
#include "proc/node_fds.h"

namespace hangscan {

// Every process's pipes and sockets, as scan_node_fds() finds them. `cancel` (may be null) is
// looked at while the tables the iterator did not see are read through /proc.
Result<NodeFds> scan_node_fds_bpf(const std::atomic<bool>* cancel = nullptr);

// The node's fd count from which the BPF scan is the faster way. Why: its load is a fixed cost
// of about 1.1 ms, the /proc scan costs about 1.4 us per fd (docs/performance.md); both give
// the same answer.
inline constexpr std::size_t kBpfFdScanFrom = 800;

// The scanner a run uses: the BPF scan when `bpf_allowed` (not --no-bpf, HANGSCAN_NO_BPF),
// the node holds at least kBpfFdScanFrom fds (or the kernel does not count them) and it
// loads, else (and on any failure of it) the /proc scan.
NodeFdScanner node_fd_scanner(bool bpf_allowed);

}  // namespace hangscan
