"""The node-wide fd scan through BPF (bpf/fd_holders.bpf.c, src/capture/bpf_fd_holders.h).

"only this process holds its write end" needs every fd table of the node. With BPF, on a node
of at least 800 fds (the iterator's load is a fixed cost that only many fds repay), the tables
are read by one task_file iterator pass: the dump reads no other process's /proc/PID/fd, says
what the /proc scan (HANGSCAN_NO_BPF=1) says, and leaves no BPF program loaded. On a smaller node
the dump scans /proc as HANGSCAN_NO_BPF=1 does. Needs root, BTF
and a build with eBPF (skipped otherwise); each test holds /tmp/hs-bpf.lock (it loads BPF).
"""

import os
import subprocess
import tempfile

import pytest

import hs_testlib as lib
from test_quiet_dump import bpf_lock  # noqa: F401  (autouse: the machine's BPF programs are counted)

MANY = lib.program("many_threads")
BPF_SCAN_FROM = 800  # src/capture/bpf_fd_holders.h, kBpfFdScanFrom
# A bystander holding `n` pipe ends: it makes the node big enough for the BPF scan.
HOLDER = ("import os, signal, sys\n"
          "ends = [os.pipe() for _ in range(int(sys.argv[2]) // 2)]\n"
          "os.write(int(sys.argv[1]), b'ready\\n')\n"
          "os.close(int(sys.argv[1]))\n"
          "signal.pause()\n")


def node_fds():
    """Open fds on the node, as the kernel counts them (Linux 6.2+; 0 where it does not)."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            total += os.stat(f"/proc/{pid}/fd").st_size
        except OSError:
            pass
    return total

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/sys/kernel/btf/vmlinux") or
    not os.path.exists(os.path.join(lib.build_dir(), "bpf", "fd_holders.lskel.h")),
    reason="the BPF fd scan needs root, BTF and a build with eBPF")


def pipe_waits(doc, pid):
    return sorted({e["via"] for th in lib.process_of(doc, pid)["threads"]
                   for e in th.get("waits_on", []) if e["via"].startswith("pipe:[")})


def traced_scan(holder_fds=0):
    """A dump (BPF allowed, under strace: openat and bpf calls) of many_threads 8 beside an idle
    `sleep` and, with `holder_fds`, a process holding that many pipe ends; it says what
    HANGSCAN_NO_BPF=1 says of the pipe only the process holds. Returns the sleep's pid, the
    trace and the BPF programs loaded before the dumps."""
    before = lib.bpf_programs()
    with lib.TargetPool() as pool:
        t = pool.start([MANY, lib.READY, "8"])
        lib.wait_for(lambda: len(lib.thread_states(t.pid)) == 9, 10, "every thread")
        bystander = pool.start(["sleep", "600"], ready=None)
        if holder_fds:
            pool.start(["/usr/bin/python3", "-c", HOLDER, lib.READY, str(holder_fds)])
        with tempfile.NamedTemporaryFile(mode="r") as trace:
            run = lib.dump(t.pid, prefix=["strace", "-f", "-qq", "-e", "trace=openat,bpf",
                                          "-o", trace.name])
            calls = trace.read()
        by_proc = lib.dump(t.pid, env=dict(os.environ, HANGSCAN_NO_BPF="1"))
        assert run.rc == 0 and by_proc.rc == 0, (run.describe(), by_proc.describe())
        waits = pipe_waits(run.doc, t.pid)
        assert len(waits) == 1 and "(only this process holds its write end" in waits[0], waits
        assert waits == pipe_waits(by_proc.doc, t.pid)
        return bystander.pid, calls, before


def test_bpf_scan_reads_no_other_fd_table_and_says_what_proc_says():
    bystander, calls, before = traced_scan(BPF_SCAN_FROM)
    assert f'"/proc/{bystander}/fd"' not in calls  # its table came from the iterator
    assert calls.count("BPF_PROG_LOAD") == 2  # the quiet snapshot's loader and the scan's
    lib.assert_none_stays(before, "fd_holders")


def test_a_node_of_few_fds_is_scanned_through_proc():
    # Below 800 fds the iterator's load (about 1.1 ms) costs more than reading every table
    # through /proc (about 1.4 us a fd): the dump reads the bystander's table itself.
    small = BPF_SCAN_FROM - 50  # the node's other processes may open some meanwhile
    if not 0 < node_fds() < small:
        pytest.skip(f"the node holds {node_fds()} fds (needs a kernel that counts them, < {small})")
    bystander, calls, before = traced_scan()
    if node_fds() >= small:
        pytest.skip(f"the node grew to {node_fds()} fds during the test")
    assert f'"/proc/{bystander}/fd"' in calls
    assert calls.count("BPF_PROG_LOAD") == 1  # the quiet snapshot's loader only
    lib.assert_none_stays(before, "fd_holders")
