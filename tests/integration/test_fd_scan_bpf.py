"""The node-wide fd scan through BPF (bpf/fd_holders.bpf.c, src/capture/bpf_fd_holders.h).

"only this process holds its write end" needs every fd table of the node. With BPF the tables
are read by one task_file iterator pass: the dump reads no other process's /proc/PID/fd, says
what the /proc scan (HANGSCAN_NO_BPF=1) says, and leaves no BPF program loaded. Needs root, BTF
and a build with eBPF (skipped otherwise); each test holds /tmp/hs-bpf.lock (it loads BPF).
"""

import json
import os
import subprocess
import tempfile

import pytest

import hs_testlib as lib
from test_quiet_dump import bpf_lock  # noqa: F401  (autouse: the machine's BPF programs are counted)

MANY = lib.program("many_threads")

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/sys/kernel/btf/vmlinux") or
    not os.path.exists(os.path.join(lib.build_dir(), "bpf", "fd_holders.lskel.h")),
    reason="the BPF fd scan needs root, BTF and a build with eBPF")


def fd_scan_programs():
    """Ids of the loaded BPF programs named as the fd scan's iterator."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                         check=True)
    return sorted(p["id"] for p in json.loads(out.stdout or "[]") if p.get("name") == "fd_holders")


def pipe_waits(doc, pid):
    return sorted({e["via"] for th in lib.process_of(doc, pid)["threads"]
                   for e in th.get("waits_on", []) if e["via"].startswith("pipe:[")})


def test_bpf_scan_reads_no_other_fd_table_and_says_what_proc_says():
    with lib.TargetPool() as pool:
        t = pool.start([MANY, lib.READY, "8"])
        lib.wait_for(lambda: len(lib.thread_states(t.pid)) == 9, 10, "every thread")
        bystander = pool.start(["sleep", "600"], ready=None)
        with tempfile.NamedTemporaryFile(mode="r") as trace:
            run = lib.dump(t.pid, prefix=["strace", "-f", "-qq", "-e", "trace=openat",
                                          "-o", trace.name])
            calls = trace.read()
        by_proc = lib.dump(t.pid, env=dict(os.environ, HANGSCAN_NO_BPF="1"))
        assert run.rc == 0 and by_proc.rc == 0, (run.describe(), by_proc.describe())
        waits = pipe_waits(run.doc, t.pid)
        assert len(waits) == 1 and "(only this process holds its write end" in waits[0], waits
        assert waits == pipe_waits(by_proc.doc, t.pid)
        assert f'"/proc/{bystander.pid}/fd"' not in calls  # its table came from the iterator
        assert fd_scan_programs() == []
