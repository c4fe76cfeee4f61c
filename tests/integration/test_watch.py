"""`hangscan watch`: the eBPF recorder and the watchdog, on real processes (docs/watch.md).

Real BPF: root with BTF, as CI is here; elsewhere every test skips with the kernel's own reason
(what `hangscan doctor` says about eBPF). Targets are tests/programs/watch_ranks.py ranks that
say "ready" through a pipe before they do their one thing.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

import pytest

from hs_testlib import (READY, MemoryCgroup, TargetPool, hangscan_bin, hs_line, program, program_source,
                        run_hangscan, thread_syscall, wait_for)

PY = "/usr/bin/python3"
RANKS = str(program_source("watch_ranks.py"))


def ebpf_unready() -> str:
    """'' when eBPF works here, else doctor's line saying why."""
    run = run_hangscan(["doctor"], timeout=60)
    for line in run.stdout.splitlines():
        if " ebpf:" in line and not line.startswith("ok"):
            return line
    if not any(" ebpf:" in line for line in run.stdout.splitlines()):
        return "doctor does not report eBPF readiness"
    return ""


@pytest.fixture(scope="module")
def ebpf():
    reason = ebpf_unready()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def pool():
    p = TargetPool()
    yield p
    p.close()


def rank_env(rank: int, world: int) -> dict:
    env = dict(os.environ)
    env.update({"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank)})
    return env


def process(doc: dict, pid: int) -> dict:
    for p in doc["processes"]:
        if p["pid"] == pid:
            return p
    raise AssertionError(f"pid {pid} not in the report: {json.dumps(doc)[:2000]}")


def fd_of(pid: int, path: str) -> int:
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
                return int(fd)
        except OSError:
            pass
    raise AssertionError(f"pid {pid} has no fd on {path}")


def read_oracle(pid: int, tid: int) -> list[tuple[int, str]]:
    """eu-stack's frames of thread `tid`, which waits in watch_ranks.py's read() (block_read)."""
    out = subprocess.run(["eu-stack", "-p", str(pid)], capture_output=True, text=True, timeout=120).stdout
    return eu_stack_frames(out, tid)


def assert_read_frames(frames: list[dict], oracle: list[tuple[int, str]], python: bool = True) -> None:
    """A wait's frames are those of watch_ranks.py's read() (block_read): every native frame's
    address equal to eu-stack's, to the thread's entry; with `python`, the eval loop's replaced by
    the Python frames main (at the read's line) and <module>, merged as in samples."""
    ours = [int(f["pc"], 16) for f in frames if f["kind"] == "native"]
    theirs = [pc for pc, name in oracle if not python or name != "_PyEval_EvalFrameDefault"]
    assert len(ours) > 5 and ours == theirs, (frames, oracle)
    got = [(f["function"], f["line"]) for f in frames if f["kind"] == "python"]
    want = [("main", hs_line("watch_ranks.py", "block_read")), ("<module>", hs_line("watch_ranks.py", "module_main"))]
    assert got == (want if python else []), got
    assert frames[-1]["function"] == "_start", frames


READ_NR = 0  # read(2) on x86-64: what /proc/PID/syscall shows first for a thread blocked in it


def unread(fd: int) -> int:
    """Bytes written to the pipe or FIFO `fd` and not read yet."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]


class Feeder:
    """Writes a byte to a reader's FIFO every `every` s from a thread of its own (each write ends
    one read() of the reader), after 200 at once that the reader takes without waiting: the
    interpreter then has specialized its read() call site (the first calls take another native
    path to os.read), so every wait a watch sees is in the native frames eu-stack sees later."""

    def __init__(self, fifo: str, every: float):
        self.every = every
        self.writes: list[float] = []
        self.fd = os.open(fifo, os.O_WRONLY)
        os.write(self.fd, b"x" * 200)
        wait_for(lambda: self.unread() == 0, 30, "the reader to take 200 bytes")
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def unread(self) -> int:
        return unread(self.fd)

    def run(self) -> None:
        while not self.stop.wait(self.every):
            os.write(self.fd, b"x")
            self.writes.append(time.monotonic())

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        os.close(self.fd)


# The two ways a wait that ends gets its user stack: the thread copies it itself on its way back
# to user space (Linux 6.18's BPF task work: with its Python frames), or the iterator's passes
# copy it while it sleeps (older kernels; native frames only).
COPIES = {"resume": {}, "iterator": {"HANGSCAN_WAIT_COPIES": "iterator"}}


@pytest.mark.parametrize("copies", sorted(COPIES))
def test_busy_rank_top_stack_and_idle_rank_wait(ebpf, pool, tmp_path, copies):
    """One rank burns CPU in a C function, one waits in read() on a FIFO the test writes to."""
    busy = pool.start([program("busy"), READY])
    fifo = str(tmp_path / "feed")
    os.mkfifo(fifo)
    reader = pool.start([PY, RANKS, READY, "reader", fifo], main_parked=True)
    fd = fd_of(reader.pid, fifo)
    feeder = Feeder(fifo, 0.3)
    try:
        run = run_hangscan(["watch", "--pid", busy.pid, "--pid", reader.pid, "--for", "4", "--json"], timeout=90,
                           env=dict(os.environ, **COPIES[copies]))
    finally:
        feeder.close()
    assert run.rc == 0, run.describe()
    oracle = read_oracle(reader.pid, reader.pid)  # in the same read() again: nobody writes now
    doc = run.doc
    assert doc["recorder"] == "ebpf" and doc["lost"] == 0, run.describe()
    b = process(doc, busy.pid)
    # hs-spin never leaves spin_forever: about one CPU (the machine is loaded: at least 20%).
    assert b["cpu_share"] > 0.2, run.describe()
    top = b["top_stacks"][0]
    names = [f["function"] for f in top["frames"]]
    assert names[:2] == ["spin_forever", "spin_main"], run.describe()
    assert top["share"] > 0.9, run.describe()
    # The whole stack, to the thread's entry (nothing cut from the top of the copy). The oracle:
    # eu-stack -i on the same thread, which never leaves spin_forever.
    spin = sorted(int(t) for t in os.listdir(f"/proc/{busy.pid}/task") if int(t) != busy.pid)
    out = subprocess.run(["eu-stack", "-i", "-p", str(busy.pid)], capture_output=True, text=True,
                         timeout=120).stdout
    assert names == eu_stack_functions(out, spin[0]), (names, out)
    r = process(doc, reader.pid)
    waits = [w for w in r["waits"] if w["syscall"] == "read"]
    assert waits, run.describe()
    w = waits[0]
    assert w["fd"] == fd
    # The feeder writes every 0.3 s: each read waits about that long, woken by this process.
    assert 0.2 < w["duration_s"] < 3.0, w
    assert w["waker"] is not None and w["waker"]["pid"] == os.getpid(), w
    for w in waits:
        assert w["tid"] == reader.pid and not w["incomplete"], w
        assert_read_frames(w["frames"], oracle, python=copies == "resume")
    assert any("pipe_read" in k for k in w["kernel"]), w
    # Every read that blocked and returned in the window is counted in the kernel (each ended
    # with one of the feeder's writes), but only the longest five are sent and reported.
    assert len(r["waits"]) <= 5, r["waits"]
    assert 5 < r["wait_count"] <= len(feeder.writes), (r["wait_count"], len(feeder.writes))




def sample_edge_thread(pool, *mode: str) -> tuple[dict, list[str], list[str]]:
    """Watches an edge_stack target for 2 s: its top on-CPU stack, that stack's functions, and
    eu-stack -i's functions of the same (spinning) thread, the oracle."""
    target = pool.start([program("edge_stack"), READY, *mode], main_parked=False)
    run = run_hangscan(["watch", "--pid", target.pid, "--for", "2", "--json"], timeout=90)
    assert run.rc == 0, run.describe()
    top = process(run.doc, target.pid)["top_stacks"][0]
    names = [f["function"] for f in top["frames"]]
    edge = [int(t) for t in os.listdir(f"/proc/{target.pid}/task") if int(t) != target.pid][0]
    out = subprocess.run(["eu-stack", "-i", "-p", str(target.pid)], capture_output=True, text=True,
                         timeout=120).stdout
    return top, names, eu_stack_functions(out, edge)


def test_a_stack_that_ends_right_above_its_frames_is_sampled_whole(ebpf, pool):
    """A thread made with clone() on a stack whose mapping ends right above its outermost
    frame (an unreadable page there, no TLS above it as a pthread has), ~6 KiB above the
    stack pointer: the second 4-KiB read of the copy fails, and the part of it below the page
    boundary must still be copied, or the stack ends at deep_frame (the samples' unwind reads
    nothing outside the copy). The oracle: eu-stack -i on the same thread."""
    top, names, oracle = sample_edge_thread(pool)
    assert names == oracle, (names, oracle)
    assert names[:3] == ["spin_at_edge", "deep_frame", "edge_main"], names
    assert top["incomplete"] is False, top


def test_a_stack_deeper_than_its_copy_is_reported_cut(ebpf, pool):
    """The same thread with a 20000-byte frame under the spinning one: a 16-KiB copy holds
    spin_at_edge's frame and most of deeper_frame's, not deeper_frame's return address. The
    sampled stack is eu-stack's first two frames and says it is incomplete (not a stack whose
    outermost function is deeper_frame)."""
    top, names, oracle = sample_edge_thread(pool, "deep")
    assert oracle[:3] == ["spin_at_edge", "deeper_frame", "edge_main"], oracle
    assert names == oracle[:2], (names, oracle)
    assert top["incomplete"] is True, top


def test_waker_is_the_task_that_woke_never_the_one_an_interrupt_stopped(ebpf, pool, tmp_path):
    """Naps ended by their timer on a CPU busy with another process were woken by no task
    (the timer's interrupt stops that process, which woke nobody), and the SIGALRMs of an
    interval timer there were sent by no task; reads woken by a writer on another CPU, idle
    until then (the kernel hands such a wake-up to the idle CPU, where the wakee's side of it
    runs in whatever is there), name the writer's thread."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")
    a, b = str(cpus[0]), str(cpus[1])
    pool.start(["taskset", "-c", a, program("busy"), READY])
    napper = pool.start(["taskset", "-c", a, PY, RANKS, READY, "nap", "0.2"], main_parked=True)
    alarmed = pool.start(["taskset", "-c", a, PY, RANKS, READY, "alarm", "0.3"], main_parked=True)
    fifo = str(tmp_path / "feed")
    os.mkfifo(fifo)
    reader = pool.start(["taskset", "-c", b, PY, RANKS, READY, "reader", fifo], main_parked=True)
    stop = threading.Event()
    feeder_tid: list[int] = []

    def feed():
        os.sched_setaffinity(0, {cpus[0]})  # this thread only: the reader's CPU stays idle
        feeder_tid.append(threading.get_native_id())
        w = os.open(fifo, os.O_WRONLY)
        try:
            while not stop.wait(0.3):
                os.write(w, b"x")
        finally:
            os.close(w)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        run = run_hangscan(["watch", "--pid", napper.pid, "--pid", reader.pid, "--pid", alarmed.pid,
                            "--for", "4", "--json"], timeout=90)
    finally:
        stop.set()
        feeder.join()
    assert run.rc == 0, run.describe()
    naps = [w for w in process(run.doc, napper.pid)["waits"] if w["syscall"] == "clock_nanosleep"]
    assert naps, run.describe()
    for w in naps:
        assert 0.15 < w["duration_s"] < 2.0 and w["waker"] is None, w
    reads = [w for w in process(run.doc, reader.pid)["waits"] if w["syscall"] == "read"]
    assert reads, run.describe()
    for w in reads:
        assert w["waker"] is not None, w
        assert (w["waker"]["pid"], w["waker"]["tid"]) == (os.getpid(), feeder_tid[0]), w
    alarms = [t for t in run.doc["timeline"] if t["kind"] == "signal" and t["pid"] == alarmed.pid]
    assert len(alarms) >= 5, run.doc["timeline"]
    for t in alarms:
        assert t["signal"] == signal.SIGALRM and t["sender"] is None, t
        assert "from an interrupt" in t["text"], t

def test_every_short_wait_that_is_reported_has_its_stack(ebpf, pool, tmp_path):
    """Waits of ~25 ms (the feeder writes every 25 ms), each ended long before an iterator pass
    every 100 ms could meet it after its first 10 ms: where threads copy their own stacks as
    their waits end, every reported wait has its exact frames (the oracle: eu-stack on the same
    read() afterwards; the script's own lines)."""
    fifo = str(tmp_path / "feed")
    os.mkfifo(fifo)
    reader = pool.start([PY, RANKS, READY, "reader", fifo], main_parked=True)
    feeder = Feeder(fifo, 0.025)
    try:
        run = run_hangscan(["watch", "--pid", reader.pid, "--for", "2", "--json"], timeout=90)
    finally:
        feeder.close()
    assert run.rc == 0, run.describe()
    if run.doc["wait_copies"] != "resume":
        pytest.skip("this kernel has no BPF task work (Linux 6.18): waits get stacks from the iterator")
    oracle = read_oracle(reader.pid, reader.pid)
    waits = process(run.doc, reader.pid)["waits"]
    assert len(waits) == 5 and all(w["syscall"] == "read" and w["duration_s"] < 0.2 for w in waits), waits
    for w in waits:
        assert_read_frames(w["frames"], oracle)


def test_the_five_longest_waits_are_reported_though_the_kernel_sends_only_those(ebpf, pool, tmp_path):
    """The kernel sends a wait only when it beats one of the process's five longest so far; the
    report must still hold exactly the five longest. Oracle: each wait runs from the moment the
    reader is seen asleep in its next read() (it took the byte before) to the moment it is seen to
    have taken the byte of the test's next write (it ran again), the writes spaced in an order
    where long gaps replace shorter kept ones and short ones come after (counted, not sent). Not
    from write to write: on a loaded machine the reader may run late after a write (its wait is
    then longer) or come back to read() late (its next wait shorter), and the report is right."""
    fifo = str(tmp_path / "feed")
    os.mkfifo(fifo)
    reader = pool.start([PY, RANKS, READY, "reader", fifo], main_parked=True)
    gaps = [0.2, 0.7, 0.05, 0.4, 0.6, 0.1, 0.8, 0.3, 0.5, 0.08, 0.15]
    hs = subprocess.Popen([hangscan_bin(), "watch", "--pid", str(reader.pid), "--for", "60", "--json"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    w = os.open(fifo, os.O_WRONLY)
    measured = []

    def taken(what: str, asleep: bool) -> float:
        """When the reader took the byte written (and, if `asleep`, waits in read() again)."""
        return wait_for(lambda: unread(w) == 0 and (not asleep or thread_syscall(reader.pid, reader.pid)
                                                   == str(READ_NR)) and time.monotonic(),
                        30, what, interval=0.001)

    try:
        wait_recording(hs)
        os.write(w, b"x")  # ends the read that began before the window; the next one is the first wait
        for gap in gaps:
            start = taken("the reader to wait in read() again", asleep=True)
            time.sleep(gap)
            os.write(w, b"x")
            measured.append(taken("the reader to take the byte", asleep=False) - start)
        os.kill(reader.pid, signal.SIGKILL)  # its end ends the window: no wait is left in progress
        reader.proc.wait(timeout=60)
        out, err = hs.communicate(timeout=60)
    finally:
        os.close(w)
        kill_leftover(hs)
    assert hs.returncode == 0, err.decode()
    doc = json.loads(out)
    r = process(doc, reader.pid)
    got = [x["duration_s"] for x in r["waits"]]
    want = sorted(measured, reverse=True)[:5]
    assert all(x["syscall"] == "read" and not x["ongoing"] for x in r["waits"]), r["waits"]
    # With what the kernel counted and lost: a wait missing here says whether it was seen at all.
    assert len(got) == 5 and all(abs(g - m) < 0.06 for g, m in zip(got, want)), (
        got, want, r["wait_count"], doc["lost"])
    # Each gap was a read of >= 10 ms the kernel counted (the counts are read every ~0.1 s, the
    # last ones may be missed when the process ends; the killed read may count as one more).
    assert len(gaps) - 2 <= r["wait_count"] <= len(gaps) + 1, (r["wait_count"], measured)


def test_sigkill_from_another_process_names_the_sender(ebpf, pool, tmp_path):
    fifo = str(tmp_path / "feed")
    os.mkfifo(fifo)
    victim = pool.start([PY, RANKS, READY, "block", fifo])
    killer = None

    def kill():
        nonlocal killer
        killer = subprocess.Popen(["/bin/kill", "-KILL", str(victim.pid)])
        killer.wait(timeout=10)

    doc = watch_until_gone(victim, kill)
    sigs = [t for t in doc["timeline"] if t["kind"] == "signal" and t["pid"] == victim.pid]
    assert sigs, doc["timeline"]
    assert sigs[0]["signal"] == 9 and sigs[0]["sender"]["pid"] == killer.pid, sigs
    assert sigs[0]["sender"]["comm"] == "kill"
    exits = [t for t in doc["timeline"] if t["kind"] == "exit" and t["pid"] == victim.pid]
    assert exits and exits[0]["signal"] == 9, doc["timeline"]
    assert process(doc, victim.pid)["exit"] == "killed by SIGKILL"


def watch_until_gone(victim, act) -> dict:
    """`watch --json` of `victim` alone: once it records, act(), then the victim's end ends the
    window; returns the report."""
    hs = subprocess.Popen([hangscan_bin(), "watch", "--pid", str(victim.pid), "--for", "60", "--json"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_recording(hs)
        act()
        victim.proc.wait(timeout=60)
        out, err = hs.communicate(timeout=60)   # all watched processes gone: the window ends
    finally:
        kill_leftover(hs)
    assert hs.returncode == 0, err.decode()
    return json.loads(out)


def kill_leftover(hs: subprocess.Popen) -> None:
    """A watch the test did not see end (a failed assertion, a timeout): its whole session goes."""
    if hs.poll() is None:
        os.killpg(hs.pid, signal.SIGKILL)
        hs.wait()


def wait_recording(hs: subprocess.Popen, timeout: float = 60.0) -> None:
    """Waits for watch's 'recording N processes' line on stderr (the pid is in the map then)."""
    ready, _, _ = select.select([hs.stderr], [], [], timeout)
    assert ready, "hangscan watch did not start recording"
    line = hs.stderr.readline().decode()
    assert line.startswith("hangscan: recording 1 process"), line


def bpf_ids(kind: str) -> set[int]:
    out = subprocess.run(["bpftool", kind, "show", "--json"], capture_output=True, text=True, check=True).stdout
    return {o["id"] for o in json.loads(out)}


def test_sigkill_of_watch_leaves_no_bpf_object(ebpf, pool, tmp_path):
    fifo = str(tmp_path / "feed")
    os.mkfifo(fifo)
    target = pool.start([PY, RANKS, READY, "block", fifo])
    progs0, maps0 = bpf_ids("prog"), bpf_ids("map")
    hs = subprocess.Popen([hangscan_bin(), "watch", "--pid", str(target.pid), "--for", "60"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: len(bpf_ids("prog") - progs0) >= 7, 30, "the recorder's programs")
        ours_p, ours_m = bpf_ids("prog") - progs0, bpf_ids("map") - maps0
        os.kill(hs.pid, signal.SIGKILL)
        hs.wait(timeout=10)
    finally:
        kill_leftover(hs)
    # Freed when their last fd closed; the kernel may take a moment (RCU) to forget them.
    wait_for(lambda: not (bpf_ids("prog") & ours_p) and not (bpf_ids("map") & ours_m), 20,
             f"programs {sorted(ours_p)} and maps {sorted(ours_m)} to be freed")
    assert target.alive()


RECORDER_PROGRAMS = {"on_cpu_sample", "on_sched_switch", "on_sched_waking", "on_sock_send", "on_sock_recv",
                     "on_fork", "copy_wait_stacks", "on_exit", "on_signal", "on_oom_victim",
                     "on_sys_exit", "on_sys_enter"}


@pytest.mark.parametrize("mode", ["window", "watchdog"])
def test_no_system_call_hook_is_attached(ebpf, pool, tmp_path, mode):
    """A raw_syscalls program costs every system call of the machine (docs/performance.md): the
    recorder attaches none. Its programs are those bpftool lists only while it runs; the socket
    programs (progress) only for the watchdog."""
    fifo = str(tmp_path / "feed")
    os.mkfifo(fifo)
    target = pool.start([PY, RANKS, READY, "block", fifo])
    progs0 = bpf_ids("prog")
    extra = ["--for", "60"] if mode == "window" else ["--stall", "60", "--output", str(tmp_path / "out")]
    hs = subprocess.Popen([hangscan_bin(), "watch", "--pid", str(target.pid)] + extra,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_recording(hs)
        progs = json.loads(subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True,
                                          text=True, check=True).stdout)
        links = json.loads(subprocess.run(["bpftool", "link", "show", "--json"], capture_output=True,
                                          text=True, check=True).stdout)
    finally:
        os.killpg(hs.pid, signal.SIGKILL)
        hs.wait()
    ours = {p["id"]: p["name"] for p in progs if p["id"] not in progs0 and p.get("name") in RECORDER_PROGRAMS}
    assert set(ours.values()) >= {"on_sched_switch", "copy_wait_stacks", "on_cpu_sample"}, ours
    assert not {"on_sys_exit", "on_sys_enter"} & set(ours.values()), ours
    sockets = {"on_sock_send", "on_sock_recv"} & set(ours.values())
    assert sockets == (set() if mode == "window" else {"on_sock_send", "on_sock_recv"}), ours
    attached = [(l.get("type"), l.get("tp_name"), l.get("target_name")) for l in links if l.get("prog_id") in ours]
    assert ("iter", None, "task") in attached, attached
    assert not [a for a in attached if a[1] in ("sys_enter", "sys_exit")], attached
    assert ("raw_tracepoint", "sched_switch", None) in attached, attached
    # Who woke a thread: taken on the waker's side of the wake-up.
    assert ("raw_tracepoint", "sched_waking", None) in attached, attached


def test_watchdog_stays_quiet_while_a_waiting_rank_moves_data(ebpf, pool, tmp_path):
    """Ranks that are almost never on CPU but receive a byte every 0.5 s (one from a FIFO with
    read(), counted from /proc/PID/io; one from a socket with recvfrom(), counted by the socket
    tracepoint) make progress: no stall for 10 s with --stall 3. Each alone, in turn."""
    fifo = str(tmp_path / "feed")
    os.mkfifo(fifo)
    path = str(tmp_path / "sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    reader = pool.start([PY, RANKS, READY, "reader", fifo], env=rank_env(0, 1), main_parked=True)
    receiver = pool.start([PY, RANKS, READY, "recv", path], env=rank_env(0, 1), main_parked=True)
    conn, _ = server.accept()
    for rank, send in ((reader, lambda w: os.write(w, b"x")), (receiver, lambda w: conn.send(b"x"))):
        stop = threading.Event()
        w = os.open(fifo, os.O_WRONLY) if rank is reader else None

        def feed():
            while not stop.wait(0.5):
                send(w)

        feeder = threading.Thread(target=feed)
        feeder.start()
        out = tmp_path / f"bundles-{rank.pid}"
        try:
            watchdog_stays_quiet(["watch", "--stall", "3", "--output", str(out), "--pid", str(rank.pid)], out)
        finally:
            stop.set()
            feeder.join()
            if w is not None:
                os.close(w)
    conn.close()
    server.close()


def start_job(pool, tmp_path, modes):
    fifo = str(tmp_path / "never")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    ranks = []
    for i, mode in enumerate(modes):
        argv = [PY, RANKS, READY, mode] + ([fifo] if mode == "block" else [])
        ranks.append(pool.start(argv, env=rank_env(i, len(modes)), main_parked=mode != "burn"))
    return ranks


def test_watchdog_fires_on_a_stopped_job_and_names_the_odd_rank(ebpf, pool, tmp_path):
    ranks = start_job(pool, tmp_path, ["block", "block", "sleep"])
    out = tmp_path / "bundles"
    args = ["watch", "--stall", "3", "--output", out, "--once"]
    for r in ranks:
        args += ["--pid", r.pid]
    run = run_hangscan(args, timeout=90)
    assert run.rc == 0, run.describe()
    m = re.search(r"stall: no watched rank made progress for \d+ s; capture written to (\S+)", run.stdout)
    assert m, run.describe()
    bundle = Path(m.group(1))
    for name in ("report.txt", "report.json", "timeline.txt", "timeline.json", "report.html", "timeline.html"):
        assert (bundle / name).is_file(), name
    report = json.loads((bundle / "report.json").read_text())
    assert report["suspects"] == [2], report["suspect_reasons"]
    assert [m["pid"] for m in report["suspect_members"]] == [ranks[2].pid]
    # The recorder's view in the bundle: the blocked ranks wait in read() since before it began.
    timeline = json.loads((bundle / "timeline.json").read_text())
    for r in ranks[:2]:
        waits = process(timeline, r.pid)["waits"]
        assert waits and waits[0]["syscall"] == "read" and waits[0]["before_window"], waits
        # with the user stack the recorder copied while it slept
        assert waits[0]["frames"] and waits[0]["frames"][-1]["function"] == "_start", waits
    # And its own verdict, from behaviour: ranks 0-1 stuck in read(), rank 2 in its sleep.
    assert timeline["suspects"] == [2], timeline["groups"]
    assert [g["ranks"] for g in timeline["groups"]] == [[2], [0, 1]], timeline["groups"]
    assert all(r.alive() for r in ranks)


def test_watch_groups_ranks_by_what_they_did_and_names_the_odd_one(ebpf, pool, tmp_path):
    """Two ranks blocked in read() since before the window, one burning CPU: the report's
    groups are the blocked pair and the busy one, which is named (text and JSON)."""
    ranks = start_job(pool, tmp_path, ["block", "block", "burn"])
    args = ["watch", "--for", "3"] + sum((["--pid", r.pid] for r in ranks), [])
    run = run_hangscan(args + ["--json"], timeout=90)
    assert run.rc == 0, run.describe()
    groups = run.doc["groups"]
    assert [(g["ranks"], g["suspect"]) for g in groups] == [([2], True), ([0, 1], False)], groups
    assert groups[0]["what"].startswith("active (on CPU "), groups
    assert re.fullmatch(r"stuck in read\(\) \(\d+\.\d s, since before the window\)", groups[1]["what"]), groups
    assert run.doc["suspects"] == [2], run.doc["suspect_reasons"]
    # Where the blocked ranks wait, from the recorder alone (their sleeps began before it did:
    # their user stacks were copied while they slept): the oracle is eu-stack on the same
    # threads, still in the same read(): the same native frames, address for address, to the
    # entry, but the eval loop's, which the Python frames replace (merged as in samples).
    for r in ranks[:2]:
        waits = [w for w in process(run.doc, r.pid)["waits"] if w["before_window"]]
        assert len(waits) == 1 and waits[0]["tid"] == r.pid and waits[0]["syscall"] == "read", waits
        assert_read_frames(waits[0]["frames"], read_oracle(r.pid, r.pid))
        assert not waits[0]["incomplete"], waits
    text = run_hangscan(args, timeout=90)
    assert text.rc == 0, text.describe()
    assert re.search(r"^  \* rank 2: active \(on CPU \d+%", text.stdout, re.M), text.stdout
    assert re.search(r"^  ranks 0-1: stuck in read\(\)", text.stdout, re.M), text.stdout
    assert re.search(r"^  suspect: rank 2 ", text.stdout, re.M), text.stdout


def test_watchdog_stays_quiet_on_a_job_that_keeps_going(ebpf, pool, tmp_path):
    ranks = start_job(pool, tmp_path, ["burn", "burn"])
    out = tmp_path / "bundles"
    args = ["watch", "--stall", "3", "--output", str(out)]
    for r in ranks:
        args += ["--pid", str(r.pid)]
    watchdog_stays_quiet(args, out)
    # Busy ranks whose top stacks differ sample by sample are one group: nobody is named.
    run = run_hangscan(["watch", "--for", "2", "--json"] + sum((["--pid", r.pid] for r in ranks), []),
                       timeout=90)
    assert run.rc == 0, run.describe()
    assert [g["ranks"] for g in run.doc["groups"]] == [[0, 1]], run.doc["groups"]
    assert run.doc["suspects"] == [], run.doc["suspect_reasons"]


def watchdog_stays_quiet(args, out: Path, env=None, recording=lambda: None) -> None:
    """Runs the watchdog `hangscan ARGS` for 10 s once recording() returned (more than three
    stall periods of 3 s), stops it with SIGINT: it must have written no bundle."""
    hs = subprocess.Popen([hangscan_bin()] + [str(a) for a in args], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, start_new_session=True)
    try:
        recording()
        time.sleep(10)
        os.kill(hs.pid, signal.SIGINT)
        stdout, stderr = hs.communicate(timeout=60)
    finally:
        kill_leftover(hs)
    assert hs.returncode == 0, stderr.decode()
    assert b"stall" not in stdout, stdout.decode()
    assert not out.exists() or not any(out.iterdir())


def test_oom_victim_shows_as_an_oom_kill_in_the_timeline(ebpf, pool, tmp_path):
    """A watched rank outgrows its memory cgroup's limit: the kernel's OOM killer ends it. The
    timeline shows the OOM killer's choice (oom:mark_victim), its SIGKILL (sent by the kernel in
    the victim's own context) and the exit; the oracle is the kernel log's "Killed process" line."""
    from test_deaths import LIMIT, kernel_kill_line

    fifo = str(tmp_path / "go")
    os.mkfifo(fifo)
    with MemoryCgroup(LIMIT) as cg:
        victim = pool.start([PY, RANKS, READY, "grow", fifo], env=rank_env(0, 1), main_parked=True)
        cg.add(victim.pid)

        def go():
            w = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # the rank holds it open for reading
            os.write(w, b"x")
            os.close(w)

        doc = watch_until_gone(victim, go)
    kernel_kill_line(victim.pid)  # the kernel's own record: this pid was OOM-killed
    mine = [t for t in doc["timeline"] if t["pid"] == victim.pid]
    kinds = [t["kind"] for t in mine]
    assert kinds.count("oom_victim") == 1 and kinds.count("exit") == 1, mine
    oom = next(t for t in mine if t["kind"] == "oom_victim")
    assert oom["text"] == f"rank 0 (pid {victim.pid}) was chosen by the OOM killer", oom
    kill = [t for t in mine if t["kind"] == "signal" and t["signal"] == 9]
    assert len(kill) == 1, mine
    # The OOM killer sends SIGKILL from the allocating task (here the victim itself), as the
    # kernel (SEND_SIG_PRIV: si_code SI_KERNEL), then marks the victim.
    assert kill[0]["sender"]["pid"] == victim.pid and kill[0]["si_code"] == 0x80, kill
    exit_ = next(t for t in mine if t["kind"] == "exit")
    assert exit_["signal"] == 9, exit_
    assert kill[0]["t_s"] <= oom["t_s"] <= exit_["t_s"], mine
    assert process(doc, victim.pid)["exit"] == "killed by SIGKILL"
    # The same as data: the words are a SIGKILL's, the data says who chose it.
    assert process(doc, victim.pid)["exit_data"] == {
        "kind": "killed", "signal": 9, "core_dumped": False, "oom_victim": True}


NO_BPF_CAPS = ["setpriv", "--inh-caps=-bpf,-perfmon,-sys_admin",
               "--bounding-set=-bpf,-perfmon,-sys_admin", "--"]


def test_without_bpf_capabilities_watch_says_why_and_samples_with_ptrace(ebpf, pool):
    """A real refusal: hangscan runs as root but without CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN
    (it keeps CAP_SYS_PTRACE), so the kernel refuses the recorder's maps. One line says why and
    what it costs instead, the hint says the fix, and the busy ranks are still sampled (ptrace):
    a C spinner, and a Python one whose samples carry its Python frames (walked while stopped)."""
    busy = pool.start([program("busy"), READY])
    py = pool.start([PY, RANKS, READY, "burn"], main_parked=False)
    run = run_hangscan(["watch", "--pid", busy.pid, "--pid", py.pid, "--for", "4", "--json"],
                       prefix=NO_BPF_CAPS, timeout=90)
    assert run.rc == 0, run.describe()
    lines = run.stderr.splitlines()
    assert re.fullmatch(
        r"hangscan: eBPF recorder: cannot (open|load) the programs: Operation not permitted; "
        r"falling back to ptrace samples at 2 Hz \(each stops the process 1-5 ms: 0\.2-1% of "
        r"its time, counted in the report; no waits, signals or exits\)", lines[0]), run.describe()
    assert lines[1] == ("hint: run as root, or give hangscan CAP_BPF and CAP_PERFMON (setcap "
                        "cap_bpf,cap_perfmon+ep); 'hangscan doctor' checks eBPF readiness"), run.describe()
    assert lines[2].startswith("hangscan: recording 2 processes (ptrace samples)"), run.describe()
    doc = run.doc
    assert doc["recorder"] == "ptrace" and doc["sample_hz"] == 2, run.describe()
    b = process(doc, busy.pid)
    # 2 Hz for 4 s: a sample at 0, 0.5, ... 4 s when the spinner was on CPU (shared machine: >= 4).
    assert 4 <= b["samples"] <= 9, run.describe()
    top = b["top_stacks"][0]
    assert [f["function"] for f in top["frames"]][:2] == ["spin_forever", "spin_main"], run.describe()
    p = process(doc, py.pid)
    assert p["samples"] >= 4, run.describe()
    loop = {hs_line("watch_ranks.py", tag) for tag in ("burn_while", "burn_for", "burn_add")}
    for stack in p["top_stacks"]:
        python = [(f["function"], f["line"]) for f in stack["frames"] if f["kind"] == "python"]
        assert [f for f, _ in python] == ["burn_cpu", "main", "<module>"] and python[0][1] in loop, stack
        assert "_PyEval_EvalFrameDefault" not in [f["function"] for f in stack["frames"]], stack
    # The stated cost, as `dump` measures its pause: 1-5 ms a sample (1.6-5 ms measured at load
    # 10 on 2 CPUs). Fails when a sample stops a process 10 ms on average (2% of its time at 2 Hz).
    assert 0 < doc["stopped_s"] < 0.010 * (b["samples"] + p["samples"]), run.describe()
    assert busy.alive() and py.alive()


def eu_stack_functions(out: str, tid: int) -> list[str]:
    """The functions of thread `tid` in eu-stack's output, innermost first."""
    thread = out.split(f"TID {tid}:", 1)[1].split("\nTID ", 1)[0]
    return re.findall(r"^#\d+\s+0x[0-9a-f]+\s+(\S+)", thread, re.M)


def eu_stack_frames(out: str, tid: int) -> list[tuple[int, str]]:
    """Thread `tid`'s frames in eu-stack's output (without -i): (address, function), innermost
    first."""
    thread = out.split(f"TID {tid}:", 1)[1].split("\nTID ", 1)[0]
    return [(int(a, 16), f) for a, f in re.findall(r"^#\d+\s+(0x[0-9a-f]+)\s+(\S+)", thread, re.M)]


def eu_stack_core(core: str) -> tuple[int, list[str]]:
    """The oracle: eu-stack's reading of a core: its pid and the main thread's functions."""
    out = subprocess.run(["eu-stack", "--core", core], capture_output=True, text=True, timeout=120).stdout
    pid = int(re.search(r"^PID (\d+)", out, re.M).group(1))
    return pid, eu_stack_functions(out, pid)


def test_watchdog_gcore_writes_one_core_per_group_into_the_bundle(ebpf, pool, tmp_path):
    """--gcore in the bundle, picked as `dump --gcore` picks: the blocked ranks 0 and 1 are one
    group (its representative: rank 0), the sleeping rank 2 is the suspect."""
    ranks = start_job(pool, tmp_path, ["block", "block", "sleep"])
    out = tmp_path / "bundles"
    args = ["watch", "--stall", "3", "--output", out, "--once", "--gcore"]
    for r in ranks:
        args += ["--pid", r.pid]
    run = run_hangscan(args, timeout=180)
    assert run.rc == 0, run.describe()
    bundle = Path(re.search(r"capture written to (\S+)", run.stdout).group(1))
    cores = sorted(c for c in os.listdir(bundle) if c.startswith("core."))
    assert [int(re.search(r"\.rank(\d+)\.\d+$", c).group(1)) for c in cores] == [0, 2], (cores, run.stderr)
    for c in cores:
        rank = int(re.search(r"\.rank(\d+)\.", c).group(1))
        assert re.search(rf"hangscan: core of rank {rank} on \S+ \(pid {ranks[rank].pid}, "
                         rf"{'suspect' if rank == 2 else 'representative'}\): {re.escape(str(bundle / c))} ",
                         run.stderr), run.stderr
        pid, functions = eu_stack_core(str(bundle / c))
        assert pid == ranks[rank].pid, (c, pid)
        want = "clock_nanosleep" if rank == 2 else "read"
        assert any(want in f for f in functions[:4]), (c, functions)
    assert all(r.alive() for r in ranks)


def test_gcore_without_stall_is_a_usage_error(pool):
    run = run_hangscan(["watch", "--pid", os.getpid(), "--for", "1", "--gcore"], timeout=30)
    assert run.rc == 64 and "--gcore goes with --stall" in run.stderr, run.describe()


def test_watchdog_counts_cpu_time_of_a_job_that_progresses_slowly(ebpf, pool, tmp_path):
    """Ranks that work 10 ms of CPU every second and sleep between are rarely sampled (19 Hz):
    runs of 3 s without a sample are the rule, and the watchdog once called such a job stalled.
    Their CPU time grows at every burst, and no sample shows them in a wait loop: progress, so
    no bundle in 10 s with --stall 4 (4, not 3: on a loaded 2-core CI machine a 3-s period
    judged only two bursts and fired about one run in four; runs of 4 s without a sample are
    still common at 19 Hz, so the old watchdog fires here). (A stopped job still fires: the
    test above.)"""
    ranks = [pool.start([PY, RANKS, READY, "trickle", "1", "10"], env=rank_env(i, 2))
             for i in range(2)]
    out = tmp_path / "bundles"
    args = ["watch", "--stall", "4", "--output", str(out)]
    for r in ranks:
        args += ["--pid", str(r.pid)]
    watchdog_stays_quiet(args, out)
    assert all(r.alive() for r in ranks)
