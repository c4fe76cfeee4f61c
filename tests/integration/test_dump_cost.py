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


@pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed")
def test_node_fd_scan_runs_beside_the_unwinding():
    # "only this process holds its write end" needs every fd table of the node; the scan starts
    # on a helper thread once the process runs again (src/proc/node_fds.h), not after the
    # unwinding on the main thread. An idle `sleep` of the test stands for the rest of the node.
    with lib.TargetPool() as pool:
        t = pool.start([MANY, lib.READY, "8"])
        lib.wait_for(lambda: len(lib.thread_states(t.pid)) == 9, 10, "every thread")
        bystander = pool.start(["sleep", "600"], ready=None)
        with tempfile.NamedTemporaryFile(mode="r") as trace:
            run = lib.dump(t.pid, env=dict(os.environ, HANGSCAN_NO_BPF="1"),
                           prefix=["strace", "-f", "-qq", "-e", "trace=openat", "-o", trace.name])
            calls = trace.read().splitlines()
        assert run.rc == 0, run.describe()
        assert any("(only this process holds its write end" in e["via"]
                   for th in lib.process_of(run.doc, t.pid)["threads"]
                   for e in th.get("waits_on", []))
        main = calls[0].split()[0]  # strace's first line: hangscan's main thread (execve)
        listed = [line.split()[0] for line in calls if f'"/proc/{bystander.pid}/fd"' in line]
        assert len(listed) == 1 and listed[0] != main, listed


@pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed")
def test_a_process_without_sockets_reads_no_tcp_table():
    # A read of /proc/PID/net/tcp walks every bucket of the kernel's connection hash (about 1 ms
    # each of tcp and tcp6 here): it is read at a process's first socket only, and many_threads
    # has none (its waits are on a pipe).
    with lib.TargetPool() as pool:
        t = pool.start([MANY, lib.READY, "8"])
        lib.wait_for(lambda: len(lib.thread_states(t.pid)) == 9, 10, "every thread")
        assert not any(link.startswith("socket:") for link in
                       (os.readlink(f"/proc/{t.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{t.pid}/fd")))
        with tempfile.NamedTemporaryFile(mode="r") as trace:
            run = lib.dump(t.pid, env=dict(os.environ, HANGSCAN_NO_BPF="1"),
                           prefix=["strace", "-f", "-qq", "-e", "trace=openat", "-o", trace.name])
            calls = trace.read()
        assert run.rc == 0, run.describe()
        assert lib.process_of(run.doc, t.pid).get("tcp_connections", []) == []
        assert "/net/tcp" not in calls
