"""`hangscan gcore` and `hangscan dump --gcore` on real processes.

A Python process holding 2 GiB of filled bytearrays (py_big.py) gets a core under 300 MB
that gdb, eu-stack and `hangscan core` read with every thread's stack intact, and that says
what it left out; the process runs on. On the 4-rank ring job, `--gcore one-per-group` writes
one core per group whose report names the same odd rank as the live report.
"""

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

import pytest

import hs_testlib as hs

PYTHON = "/usr/bin/python3"
BIG = hs.program_source("py_big.py")
RING = hs.program_source("ring_allreduce.py")


@pytest.fixture(scope="module")
def big(module_targets):
    return module_targets.start([PYTHON, str(BIG), hs.READY, "2048"], timeout=120)


@pytest.fixture(scope="module")
def outdir():
    d = tempfile.mkdtemp(prefix="hs-gcore-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def gcore_run(big, outdir):
    run = hs.run_hangscan(["gcore", "--pid", big.pid, "-o", outdir, "--json"], timeout=300)
    assert run.rc == 0, run.describe()
    assert run.doc and os.path.exists(run.doc["path"]), run.describe()
    return run


def python_frames(thread):
    return [(f.get("function"), f.get("file"), f.get("line"))
            for f in thread.get("frames", []) if f.get("kind") == "python"]


def test_core_is_small_private_and_target_runs_on(big, gcore_run):
    path = gcore_run.doc["path"]
    st = os.stat(path)
    assert st.st_size < 300 * 1024 * 1024, f"core is {st.st_size} bytes"
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert re.fullmatch(rf"core\.[^/]+\.{big.pid}", os.path.basename(path)), path
    assert gcore_run.doc["threads"] == 4
    assert 0 < gcore_run.doc["pause_us"] < 30_000_000
    assert gcore_run.doc["omitted_bytes"] >= 1 << 30
    hs.assert_runs_on(big.pid)


def test_core_python_stacks_match_live(big, gcore_run):
    live = hs.dump(big.pid)
    assert live.rc == 0, live.describe()
    core = hs.run_hangscan(["core", gcore_run.doc["path"], "--json"], timeout=300)
    assert core.rc in (0, 1), core.describe()
    live_p = hs.process_of(live.doc, big.pid)
    core_p = hs.process_of(core.doc, big.pid)
    live_stacks = {t["tid"]: python_frames(t) for t in live_p["threads"]}
    core_stacks = {t["tid"]: python_frames(t) for t in core_p["threads"]}
    assert set(core_stacks) == set(live_stacks)
    for tid, frames in live_stacks.items():
        assert frames, f"live thread {tid} has no Python frames"
        assert core_stacks[tid] == frames, f"thread {tid}: core {core_stacks[tid]} live {frames}"
    # And the lines are the ones the program blocks at.
    src = str(BIG)
    # The innermost frame of py_big.py in each thread (worker_wait is inside threading.py).
    ours = {[f for f in frames if f[1] == src][0][1:] for frames in core_stacks.values()}
    for tag in ("worker_wait", "nested_sleep", "lock_wait", "main_block"):
        assert (src, hs.hs_line("py_big.py", tag)) in ours, (tag, ours)
    nested = [f for f in core_stacks.values() if f[0][0] == "nested_sleep"][0]
    assert [f[0] for f in nested[:6]] == ["nested_sleep"] * 6
    # The core says what it left out.
    omitted = core_p["omitted"]
    assert any("over --max-size" in line for line in omitted), omitted
    # Native frames are there too (merged with the Python ones by `hangscan core`).
    main = hs.thread_by_tid(core_p, big.pid)
    native = hs.function_names(hs.frames_of(main))
    for fn in ("PyThread_acquire_lock_timed", "Py_RunMain", "__libc_start_main"):
        assert fn in native, hs.format_stack(main)


def test_gdb_reads_core(big, gcore_run):
    out = subprocess.run(["gdb", "-batch", "-nx", "-ex", "thread apply all bt", PYTHON,
                          gcore_run.doc["path"]], capture_output=True, text=True, timeout=300)
    text = out.stdout
    assert len(re.findall(r"^Thread \d+ \(.*LWP (\d+)\)\)", text, re.M)) == 4, text[-3000:]
    for tid in hs.tids(big.pid):
        assert f"LWP {tid}" in text
    assert text.count("_PyEval_EvalFrameDefault") >= 4, text[-3000:]
    assert "Cannot access memory" not in text.split("_PyEval_EvalFrameDefault")[0], text[-3000:]


def test_eu_stack_reads_core(big, gcore_run):
    out = subprocess.run(["eu-stack", "--core", gcore_run.doc["path"], "-e", PYTHON],
                         capture_output=True, text=True, timeout=300)
    text = out.stdout
    for tid in hs.tids(big.pid):
        assert re.search(rf"^TID {tid}:", text, re.M), text[-3000:]
    assert text.count("_PyEval_EvalFrameDefault") >= 4, text[-3000:] + out.stderr[-2000:]


def test_signal_needs_yes(big):
    run = hs.run_hangscan(["gcore", "--pid", big.pid, "--signal", "ABRT"])
    assert run.rc == 64, run.describe()
    assert "--yes" in run.stderr
    hs.assert_runs_on(big.pid)


def test_existing_core_is_not_overwritten(big, gcore_run, outdir):
    before = os.stat(gcore_run.doc["path"]).st_mtime_ns
    run = hs.run_hangscan(["gcore", "--pid", big.pid, "-o", outdir])
    assert run.rc == 2 and "already there" in run.stderr, run.describe()
    assert os.stat(gcore_run.doc["path"]).st_mtime_ns == before


def test_dump_gcore_one_per_group_on_ring_job(targets):
    job = targets.start([PYTHON, str(RING), hs.READY], timeout=120, main_parked=False)
    with tempfile.TemporaryDirectory(prefix="hs-gcore-ring-") as d:
        live = hs.dump(job.pid, "--subprocesses", "--gcore", "one-per-group", "--gcore-dir", d,
                       timeout=300)
        assert live.rc in (0, 1), live.describe()
        assert live.doc["suspects"] == [2], live.doc.get("suspect_reasons")
        cores = sorted(os.listdir(d))
        assert len(cores) == 2, (cores, live.stderr)
        ranks = sorted(int(re.search(r"\.rank(\d+)\.\d+$", c).group(1)) for c in cores)
        assert ranks == [0, 2], cores
        for c in cores:
            assert stat.S_IMODE(os.stat(os.path.join(d, c)).st_mode) == 0o600
        rep = hs.run_hangscan(["core", "--json"] + [os.path.join(d, c) for c in cores],
                              timeout=300)
        assert rep.rc in (0, 1), rep.describe()
        assert sorted(p["rank"] for p in rep.doc["processes"]) == [0, 2]
        # Two cores of a 4-rank job cannot elect a majority (ranks 1,3 are "missing" there);
        # what must match: each core's stack is its rank's live stack, and the odd rank of the
        # live report is alone in its group, apart from the majority's representative.
        groups = [sorted(g["ranks"]) for g in rep.doc["groups"]]
        assert sorted(groups) == [[0], [2]], groups
        for rank in (0, 2):
            core_p = [p for p in rep.doc["processes"] if p["rank"] == rank][0]
            live_p = [p for p in live.doc["processes"] if p.get("rank") == rank][0]
            assert core_p["pid"] == live_p["pid"]
            main_core = hs.thread_by_tid(core_p, core_p["pid"])
            main_live = hs.thread_by_tid(live_p, live_p["pid"])
            assert python_frames(main_core) == python_frames(main_live), rank
        odd_line = hs.hs_line("ring_allreduce.py", "odd")
        odd_core = [p for p in rep.doc["processes"] if p["rank"] == 2][0]
        assert (str(RING), odd_line) in {f[1:] for f in python_frames(
            hs.thread_by_tid(odd_core, odd_core["pid"]))}
    for p in live.doc["processes"]:
        if p.get("rank") is not None:
            hs.assert_runs_on(p["pid"])


def test_dump_gcore_bad_size_is_usage_before_any_stop(big):
    empty = tempfile.mkdtemp(prefix="hs-gcore-bad-")
    try:
        run = hs.dump(big.pid, "--gcore", "--gcore-dir", empty, "--gcore-max-size", "lots")
    finally:
        left = os.listdir(empty)
        shutil.rmtree(empty, ignore_errors=True)
    assert run.rc == 64, run.describe()
    assert "hangscan: --gcore-max-size lots: not a size" in run.stderr
    assert "hint: give bytes with an optional K, M or G suffix" in run.stderr
    assert run.stdout == ""           # no report: nothing was captured
    assert left == []


def test_writer_killed_mid_write_leaves_no_core_and_the_target_runs_on(big):
    """A writer killed while writing (here by SIGXFSZ: a 1 MiB file size limit, as a full
    quota would) leaves no file under a core's name, only its hidden partial file; the
    target, stopped for the write, runs on."""
    d = tempfile.mkdtemp(prefix="hs-gcore-killed-")
    try:
        killed = hs.run_hangscan(["gcore", "--pid", big.pid, "-o", d], timeout=300,
                                 prefix=["prlimit", f"--fsize={1 << 20}"])
        assert killed.rc == -signal.SIGXFSZ, killed.describe()
        names = os.listdir(d)
        assert [n for n in names if n.startswith("core.")] == [], names
        assert len(names) == 1, names
        assert re.fullmatch(rf"\.core\.[^/]+\.{big.pid}\.partial-\d+", names[0]), names
        assert os.path.getsize(os.path.join(d, names[0])) == 1 << 20
        hs.assert_runs_on(big.pid)
        # The leftover does not stand in the next writer's way.
        run = hs.run_hangscan(["gcore", "--pid", big.pid, "-o", d, "--json"], timeout=300)
        assert run.rc == 0, run.describe()
        assert os.path.basename(run.doc["path"]) in os.listdir(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
