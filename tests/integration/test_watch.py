"""`hangscan watch`: the eBPF recorder and the watchdog, on real processes (docs/watch.md).

Real BPF: root with BTF, as CI is here; elsewhere every test skips with the kernel's own reason
(what `hangscan doctor` says about eBPF). Targets are tests/programs/watch_ranks.py ranks that
say "ready" through a pipe before they do their one thing.
"""
from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from hs_testlib import READY, TargetPool, hangscan_bin, program_source, run_hangscan, wait_for

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


def test_busy_rank_top_stack_and_idle_rank_wait(ebpf, pool, tmp_path):
    """One rank burns CPU in a C function, one waits in read() on a FIFO the test writes to."""
    busy = pool.start([str(Path(os.environ.get("HS_BUILD_DIR", "build")) / "programs" / "busy"), READY])
    fifo = str(tmp_path / "feed")
    os.mkfifo(fifo)
    reader = pool.start([PY, RANKS, READY, "reader", fifo], main_parked=True)
    fd = fd_of(reader.pid, fifo)
    stop = threading.Event()
    writes: list[float] = []

    def feed():
        w = os.open(fifo, os.O_WRONLY)
        try:
            while not stop.wait(0.3):
                os.write(w, b"x")
                writes.append(time.monotonic())
        finally:
            os.close(w)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        run = run_hangscan(["watch", "--pid", busy.pid, "--pid", reader.pid, "--for", "4", "--json"], timeout=90)
    finally:
        stop.set()
        feeder.join()
    assert run.rc == 0, run.describe()
    doc = run.doc
    assert doc["recorder"] == "ebpf" and doc["lost"] == 0, run.describe()
    b = process(doc, busy.pid)
    # hs-spin never leaves spin_forever: about one CPU (the machine is loaded: at least 20%).
    assert b["cpu_share"] > 0.2, run.describe()
    top = b["top_stacks"][0]
    names = [f["function"] for f in top["frames"]]
    assert names[:2] == ["spin_forever", "spin_main"], run.describe()
    assert top["share"] > 0.9, run.describe()
    r = process(doc, reader.pid)
    waits = [w for w in r["waits"] if w["syscall"] == "read"]
    assert waits, run.describe()
    w = waits[0]
    assert w["fd"] == fd
    # The feeder writes every 0.3 s: each read waits about that long, woken by this process.
    assert 0.2 < w["duration_s"] < 3.0, w
    assert w["waker"] is not None and w["waker"]["pid"] == os.getpid(), w
    names = [f["function"] for f in w["frames"]]
    assert "_PyEval_EvalFrameDefault" in names, w
    assert any("pipe_read" in k for k in w["kernel"]), w


def test_sigkill_from_another_process_names_the_sender(ebpf, pool, tmp_path):
    fifo = str(tmp_path / "feed")
    os.mkfifo(fifo)
    victim = pool.start([PY, RANKS, READY, "block", fifo])
    hs = subprocess.Popen([hangscan_bin(), "watch", "--pid", str(victim.pid), "--for", "20", "--json"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_recording(hs)
        killer = subprocess.Popen(["/bin/kill", "-KILL", str(victim.pid)])
        killer.wait(timeout=10)
        victim.proc.wait(timeout=10)
        out, err = hs.communicate(timeout=60)   # all watched processes gone: the window ends
    finally:
        if hs.poll() is None:
            os.killpg(hs.pid, signal.SIGKILL)
            hs.wait()
    assert hs.returncode == 0, err.decode()
    doc = json.loads(out)
    sigs = [t for t in doc["timeline"] if t["kind"] == "signal" and t["pid"] == victim.pid]
    assert sigs, doc["timeline"]
    assert sigs[0]["signal"] == 9 and sigs[0]["sender"]["pid"] == killer.pid, sigs
    assert sigs[0]["sender"]["comm"] == "kill"
    exits = [t for t in doc["timeline"] if t["kind"] == "exit" and t["pid"] == victim.pid]
    assert exits and exits[0]["signal"] == 9, doc["timeline"]
    assert process(doc, victim.pid)["exit"] == "killed by SIGKILL"


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
        if hs.poll() is None:
            os.killpg(hs.pid, signal.SIGKILL)
            hs.wait()
    # Freed when their last fd closed; the kernel may take a moment (RCU) to forget them.
    wait_for(lambda: not (bpf_ids("prog") & ours_p) and not (bpf_ids("map") & ours_m), 20,
             f"programs {sorted(ours_p)} and maps {sorted(ours_m)} to be freed")
    assert target.alive()


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
    for name in ("report.txt", "report.json", "timeline.txt", "timeline.json"):
        assert (bundle / name).is_file(), name
    report = json.loads((bundle / "report.json").read_text())
    assert report["suspects"] == [2], report["suspect_reasons"]
    assert [m["pid"] for m in report["suspect_members"]] == [ranks[2].pid]
    # The recorder's view in the bundle: the blocked ranks wait in read() since before it began.
    timeline = json.loads((bundle / "timeline.json").read_text())
    for r in ranks[:2]:
        waits = process(timeline, r.pid)["waits"]
        assert waits and waits[0]["syscall"] == "read" and waits[0]["before_window"], waits
    assert all(r.alive() for r in ranks)


def test_watchdog_stays_quiet_on_a_job_that_keeps_going(ebpf, pool, tmp_path):
    ranks = start_job(pool, tmp_path, ["burn", "burn"])
    out = tmp_path / "bundles"
    args = [hangscan_bin(), "watch", "--stall", "3", "--output", str(out)]
    for r in ranks:
        args += ["--pid", str(r.pid)]
    hs = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        time.sleep(10)
        os.kill(hs.pid, signal.SIGINT)
        stdout, stderr = hs.communicate(timeout=30)
    finally:
        if hs.poll() is None:
            os.killpg(hs.pid, signal.SIGKILL)
            hs.wait()
    assert hs.returncode == 0, stderr.decode()
    assert b"stall" not in stdout, stdout.decode()
    assert not out.exists() or not any(out.iterdir())
