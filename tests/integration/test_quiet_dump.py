"""The quiet dump (issue #33 part 2): blocked threads copied by BPF, never stopped or woken.

tests/programs/quiet_threads.c parks N threads in a pipe read, socket recv, condition variable,
nanosleep, poll and epoll_wait (plus, on request, one spinning thread or one that wakes every
2 ms); tests/programs/py_quiet.py parks Python threads in queue.get, Lock.acquire, time.sleep,
socket recv and Event.wait. Across two dumps every blocked thread's context-switch counts and
/proc/TID/syscall must not move (a ptrace stop restarts the call and counts two switches), its
frames must equal eu-stack's (native, taken after) and faulthandler's (Python), blocked_s must
grow, and `capture` says "bpf" for the blocked and "ptrace" for the running one. No BPF program
may stay loaded, also when hangscan is killed mid-dump. Needs root and a kernel with BPF
(skipped otherwise); each test holds /tmp/hs-bpf.lock (it loads BPF).
"""

import fcntl
import os
import re
import signal
import subprocess
import tempfile

import pytest

import hs_testlib as lib

QUIET = lib.program("quiet_threads")
PY_QUIET = lib.program_source("py_quiet.py")
PYTHON = "/usr/bin/python3.11"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/sys/kernel/btf/vmlinux") or
    not os.path.exists(os.path.join(lib.build_dir(), "bpf", "snapshot.lskel.h")),
    reason="the quiet path needs root, BTF and a build with eBPF")


@pytest.fixture(autouse=True)
def bpf_lock():
    with open("/tmp/hs-bpf.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def untouched(pid):
    """{tid: (voluntary, nonvoluntary switches, /proc/TID/syscall)}: what a stop would move."""
    out = {}
    for tid in lib.tids(pid):
        status = lib.read_text(f"/proc/{pid}/task/{tid}/status") or ""
        sw = tuple(line.split()[1] for line in status.splitlines() if "ctxt_switches" in line)
        out[tid] = (sw, lib.read_text(f"/proc/{pid}/task/{tid}/syscall"))
    return out


def quiet_dump(pid, *extra):
    run = lib.dump(pid, "--native", *extra)
    assert run.rc == 0, run.describe()
    proc = lib.process_of(run.doc, pid)
    return proc


def start_native(pool, n, extra="none"):
    t = pool.start([QUIET, lib.READY, str(n), extra])
    lib.wait_for(lambda: len(lib.thread_states(t.pid)) == n + 1 + (extra != "none"), 10,
                 "every thread")
    return t


def eu_stack(pid):
    """{tid: [pc, ...]} from `eu-stack -i -s -p PID`: one entry per frame, inline ones included
    (they share their frame's pc). Compared by address: the two name aliases differently."""
    out = subprocess.run(["eu-stack", "-i", "-s", "-p", str(pid)], capture_output=True, text=True,
                         timeout=60).stdout
    stacks, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"^TID (\d+):", line)
        if m:
            cur = stacks.setdefault(int(m.group(1)), [])
            continue
        m = re.match(r"^#\d+\s+(0x[0-9a-f]+)", line)
        if m and cur is not None:
            cur.append(int(m.group(1), 16))
    return stacks


def test_blocked_native_threads_are_never_woken_and_match_eu_stack():
    with lib.TargetPool() as pool:
        t = start_native(pool, 12)
        before = untouched(t.pid)
        first = quiet_dump(t.pid)
        second = quiet_dump(t.pid)
        assert untouched(t.pid) == before
        assert first["pause_us"] == 0 and second["pause_us"] == 0
        assert {th["capture"] for th in first["threads"] + second["threads"]} == {"bpf"}
        blocked = {th["tid"]: th["blocked_s"] for th in first["threads"]}
        for th in second["threads"]:
            assert th["blocked_s"] > blocked[th["tid"]], th
        eu = eu_stack(t.pid)
        for th in second["threads"]:
            ours = [int(f["pc"], 16) for f in th["frames"] if f["kind"] in ("native", "inline")]
            assert ours == eu[th["tid"]], (th["name"], ours, eu[th["tid"]])
        lines = {lib.hs_line("quiet_threads.c", tag) for tag in
                 ("q_read", "q_recv", "q_cond", "q_poll", "q_epoll")}  # q_sleep: a tail call
        seen = {f["line"] for th in second["threads"] for f in th["frames"]
                if f.get("function") == "block_in"}
        assert lines <= seen


def test_only_the_running_thread_is_stopped():
    with lib.TargetPool() as pool:
        t = start_native(pool, 12, "spin")
        before = untouched(t.pid)
        proc = quiet_dump(t.pid)
        after = untouched(t.pid)
        spin = lib.thread_named(proc, "hs-spin")
        assert spin["capture"] == "ptrace" and proc["pause_us"] > 0
        assert "spin_main" in lib.function_names(spin["frames"])
        for th in proc["threads"]:
            if th["tid"] != spin["tid"]:
                assert th["capture"] == "bpf" and after[th["tid"]] == before[th["tid"]], th
        lib.assert_runs_on(t.pid)


def test_a_thread_waking_every_few_ms_is_retaken_or_stopped_never_torn():
    with lib.TargetPool() as pool:
        t = start_native(pool, 6, "tick")
        for _ in range(5):
            proc = quiet_dump(t.pid)
            tick = lib.thread_named(proc, "hs-tick")
            assert tick["capture"] in ("bpf", "ptrace")
            names = lib.function_names(tick["frames"])
            # Whole: from the sleep (or the moment it ran) down to the thread's start.
            assert "tick_main" in names and "start_thread" in names, names
            assert not tick["incomplete"], tick
        lib.assert_runs_on(t.pid)


def faulthandler_stacks(pid, report, nthreads):
    """[(frames, cut)] per thread from py_quiet.py's faulthandler dump (asked now by SIGUSR1):
    frames [(function, line)] of py_quiet.py, innermost first; cut when faulthandler stopped at
    its own bound (100 frames) and wrote "..."."""
    os.kill(pid, signal.SIGUSR1)
    lib.wait_for(lambda: (lib.read_text(report) or "").count("Thread 0x") +
                 (lib.read_text(report) or "").count("Current thread 0x") == nthreads, 10,
                 "faulthandler's dump")
    stacks = []
    for line in (lib.read_text(report) or "").splitlines():
        if "thread 0x" in line.lower():
            stacks.append(([], False))
        elif line.strip() == "...":
            stacks[-1] = (stacks[-1][0], True)
        m = re.match(r'\s+File "(.*)", line (\d+) in (\S+)', line)
        if m and m.group(1) == str(PY_QUIET):
            stacks[-1][0].append((m.group(3), int(m.group(2))))
    return stacks


def python_frames(th):
    """[(function, line)] of py_quiet.py in a thread of ours, innermost first."""
    return [(f["function"].rsplit(".", 1)[-1], f["line"]) for f in th["frames"]
            if f["kind"] == "python" and f["file"] == str(PY_QUIET)]


def test_python_threads_untouched_and_equal_to_faulthandler():
    with lib.TargetPool() as pool, tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "faulthandler.txt")
        t = pool.start([PYTHON, str(PY_QUIET), lib.READY, "10", report], timeout=60)
        lib.wait_for(lambda: len(lib.thread_states(t.pid)) == 11 and
                     set(lib.thread_states(t.pid).values()) == {"S"}, 30, "every thread asleep")
        before = untouched(t.pid)
        quiet_dump(t.pid)
        run = lib.dump(t.pid, "--native", "-v")
        assert run.rc == 0, run.describe()
        proc = lib.process_of(run.doc, t.pid)
        assert untouched(t.pid) == before and proc["pause_us"] == 0
        # Every thread copied asleep by the snapshot, its Python frames read from user space
        # inside the proven sleep (the program walks none: docs/design.md says why).
        assert f"pid {t.pid}: 11 threads copied asleep (bpf), 0 stopped\n" in run.stderr
        ours = sorted(tuple(python_frames(th)) for th in proc["threads"])
        theirs = [frames for frames, _ in faulthandler_stacks(t.pid, report, 11)]
        assert ours == sorted(tuple(s) for s in theirs)


def test_no_bpf_program_stays_loaded_after_sigkill_mid_dump():
    with lib.TargetPool() as pool:
        t = start_native(pool, 6)
        loaded = lib.bpf_programs()
        env = dict(os.environ, HANGSCAN_TEST_STOP_WHILE_FROZEN="1")
        proc = subprocess.Popen([lib.hangscan_bin(), "dump", "--pid", str(t.pid), "--json"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, env=env)
        try:
            lib.wait_for(lambda: lib.process_state(proc.pid) == "T", 60, "hangscan mid-dump")
            assert lib.bpf_programs_since(loaded, "snapshot_threads")  # the iterator, held by hangscan
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        lib.assert_none_stays(loaded, "snapshot_threads")
        lib.assert_runs_on(t.pid)


# A parent that starts two quiet_threads children (4 blocked threads each), says ready once both
# did, then blocks in a read: three processes whose threads all sleep.
LAUNCHER = r"""
import os, subprocess, sys
for _ in range(2):
    r, w = os.pipe()
    subprocess.Popen([sys.argv[1], str(w), "4", "none"], pass_fds=(w,))
    os.close(w)
    assert os.read(r, 16) == b"ready\n"
    os.close(r)
os.write(int(sys.argv[2]), b"ready\n")
os.read(os.pipe()[0], 1)
"""


def test_one_program_load_for_a_dump_of_three_processes():
    """The program is loaded once per run, with one iterator link per process, and nothing stays
    loaded. Counted by the kernel calls (strace): the iterator reaches the kernel as a
    BPF_PROG_LOAD of the tracing type, or inside one of a light skeleton's loader (the syscall
    type; libbpf's feature probes load other types); BPF_LINK_CREATE is an attach."""
    with lib.TargetPool() as pool:
        t = pool.start([PYTHON, "-c", LAUNCHER, QUIET, lib.READY])
        kids = lib.children(t.pid)
        assert len(kids) == 2
        for kid in kids:
            lib.wait_for(lambda: len(lib.thread_states(kid)) == 5, 10, "every thread")
        loaded = lib.bpf_programs()
        with tempfile.NamedTemporaryFile(mode="r") as trace:
            run = lib.dump(t.pid, "--subprocesses", "-v",
                           prefix=["strace", "-f", "-qq", "-e", "trace=bpf", "-o", trace.name])
            calls = trace.read()
        assert run.rc == 0, run.describe()
        assert sorted(p["pid"] for p in run.doc["processes"]) == sorted([t.pid] + kids)
        for p in run.doc["processes"]:
            assert p["pause_us"] == 0
            assert {th["capture"] for th in p["threads"]} == {"bpf"}
        loads = [c for c in calls.splitlines() if "BPF_PROG_LOAD" in c]
        # The processes wait on pipes whose write end they hold themselves: the node-wide fd
        # scan runs once, through its own iterator (one more load and link, bpf/fd_holders.bpf.c)
        # on a node of at least 800 fds, else through /proc (test_fd_scan_bpf.py); which one
        # depends on the shared machine's other processes at the moment of the dump.
        scan = sum("BPF_PROG_TYPE_TRACING" in c or "BPF_PROG_TYPE_SYSCALL" in c
                   for c in loads) - 1
        assert scan in (0, 1), loads
        assert sum("BPF_LINK_CREATE" in c for c in calls.splitlines()) == 3 + scan
        assert sum("quiet source bpf loaded" in line for line in run.stderr.splitlines()) == 1
        lib.assert_none_stays(loaded, "snapshot_threads")


# Deeper than faulthandler's bound (100 frames) and the recorder's BPF walker's (128).
DEPTH = 200


def test_python_frames_read_inside_the_sleep_and_a_deep_chain_whole():
    """The Python frames of blocked threads (queue.get, Lock.acquire, time.sleep, socket recv,
    Event.wait), read from user space between the snapshot's two passes (inside the proven
    sleep), equal faulthandler's, a chain of 201 frames whole, and no thread is woken by either
    of two dumps."""
    with lib.TargetPool() as pool, tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "faulthandler.txt")
        t = pool.start([PYTHON, str(PY_QUIET), lib.READY, "5", report, str(DEPTH)], timeout=60)
        lib.wait_for(lambda: len(lib.thread_states(t.pid)) == 7 and
                     set(lib.thread_states(t.pid).values()) == {"S"}, 30, "every thread asleep")
        before = untouched(t.pid)
        first = quiet_dump(t.pid)
        second = quiet_dump(t.pid)
        assert untouched(t.pid) == before
        for proc in (first, second):
            assert proc["pause_us"] == 0
            deep = [th for th in proc["threads"] if len(python_frames(th)) > 128]
            assert len(deep) == 1
            assert python_frames(deep[0])[0][0] == "deep"
            assert len(python_frames(deep[0])) == DEPTH + 1
            assert {th["capture"] for th in proc["threads"]} == {"bpf"}
            assert all("python_capture" not in th for th in proc["threads"])
        ours = [python_frames(th) for th in second["threads"]]
        theirs = faulthandler_stacks(t.pid, report, 7)
        whole = sorted(tuple(f) for f, cut in theirs if not cut)
        assert sorted(tuple(f) for f in ours if len(f) <= 128) == whole
        (cut_frames,) = [f for f, cut in theirs if cut]
        (deep_frames,) = [f for f in ours if len(f) > 128]
        assert deep_frames[:len(cut_frames)] == cut_frames
