"""What a dump reads, counted with strace: work that must not grow with the number of threads.

tests/programs/many_threads parks a quarter of its threads in read() and a quarter in poll() on
one pipe whose write end only the process itself holds. Threads waiting on one pipe the same
way share one answer (src/proc/socket_waits.cpp): the pipe's holders' fdinfo is read once for
the job's tables and once for the node's, not once per thread (docs/performance.md).
"""

import os
import re
import shutil
import tempfile

import pytest

import hs_testlib as lib

MANY = lib.program("many_threads")


@pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed")
def test_threads_waiting_on_one_pipe_read_its_fdinfo_once():
    with lib.TargetPool() as pool:
        t = pool.start([MANY, lib.READY, "40"])
        lib.wait_for(lambda: len(lib.thread_states(t.pid)) == 41, 10, "every thread")
        with tempfile.NamedTemporaryFile(mode="r") as trace:
            run = lib.dump(t.pid, env=dict(os.environ, HANGSCAN_NO_BPF="1"),
                           prefix=["strace", "-f", "-qq", "-e", "trace=openat", "-o", trace.name])
            calls = trace.read()
        assert run.rc == 0, run.describe()
        proc = lib.process_of(run.doc, t.pid)
        only_self = [th["tid"] for th in proc["threads"]
                     if any("(only this process holds its write end" in e["via"]
                            for e in th.get("waits_on", []))]
        assert len(only_self) == 20
        fdinfo = re.findall(rf'"/proc/{t.pid}/fdinfo/\d+"', calls)
        assert len(fdinfo) == 4, fdinfo  # its 2 ends, in the job's tables, then the node's
