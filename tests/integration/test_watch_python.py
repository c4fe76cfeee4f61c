"""`hangscan watch`: the Python frames of on-CPU samples, against CPython's own (faulthandler).

The recorder copies a sampled thread's Python frames at the sample (bpf/py_frames.bpf.h) and
hangscan names them afterwards and merges them with the native frames, as `dump --native`
does. tests/programs/py_burn.py spins in Burner.spin on a worker thread; after the window the
test asks CPython for that thread's stack (faulthandler on SIGUSR1). Its main thread waits in
join() since before the window: its wait's Python frames (read while it slept) must be
faulthandler's, every line. The top on-CPU stack's
Python frames must be faulthandler's: same count, files and functions, the same lines but the
innermost (the sample and faulthandler catch the loop at different lines: both must be lines
of the loop). And the merge must have taken place: no eval-loop frame left, the Python frames
between the native ones. For Debian's python3.11 (required) and every pyenv 3.x present.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile

import pytest

import hs_testlib as lib
from test_python import INTERPRETERS, present_or_skip
from test_python_faulthandler import complete, parse_faulthandler
from test_watch import ebpf, kill_leftover, pool, process, wait_recording  # noqa: F401 (fixtures)

PROGRAM = lib.program_source("py_burn.py")
LOOP = {lib.hs_line("py_burn.py", tag) for tag in ("spin_while", "spin_for", "spin_add")}
GAP = "[native frames not recorded: the stack is cut here]"
RAN = []
ABSENT = []


def same_function(minor, name, co_name):
    """co_qualname (3.11+) is co_name or ends with '.' + co_name."""
    return name == co_name or (minor >= 11 and name.endswith("." + co_name))


def watch_and_ask_cpython(pool, python, *mode, main=False):
    """Watches py_burn.py for 2 s, then asks CPython for its worker's stack: (the watched
    process's report, faulthandler's frames of the worker[, and of the main thread])."""
    tmp = tempfile.mkdtemp(prefix="hs-wpy-")
    os.chmod(tmp, 0o755)
    try:
        target = pool.start([python, str(PROGRAM), lib.READY, tmp, *mode], main_parked=True, timeout=60)
        worker = json.load(open(os.path.join(tmp, "worker.json")))
        run = lib.run_hangscan(["watch", "--pid", target.pid, "--for", "2", "--json"], timeout=120)
        assert run.rc == 0, run.describe()
        os.kill(target.pid, signal.SIGUSR1)
        text = lib.wait_for(lambda: complete(os.path.join(tmp, "faulthandler.txt"), 2), 30,
                            "faulthandler to write both threads")
        stacks = parse_faulthandler(text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    expected = stacks[int(worker["ident"], 16)]
    if main:
        return process(run.doc, target.pid), expected, stacks[int(worker["main"], 16)]
    return process(run.doc, target.pid), expected


def assert_python_frames(stack, expected, minor):
    """The stack's Python frames are faulthandler's: count, files, functions, lines but the
    innermost (a line of the spin loop in both)."""
    got = [(f["function"], f["file"], f["line"]) for f in stack["frames"] if f["kind"] == "python"]
    assert len(got) == len(expected), (got, expected)
    assert [g[1:] for g in got[1:]] == [e[1:] for e in expected[1:]], (got, expected)
    assert got[0][1] == expected[0][1] == str(PROGRAM), (got, expected)
    assert got[0][2] in LOOP and expected[0][2] in LOOP, (got, expected, LOOP)
    for (name, _, _), (co_name, _, _) in zip(got, expected):
        assert same_function(minor, name, co_name), (got, expected)


@pytest.mark.parametrize("interp", INTERPRETERS, ids=[i[0] for i in INTERPRETERS])
def test_a_stack_deeper_than_its_copy_keeps_its_python_chain(ebpf, pool, interp):  # noqa: F811
    """80 calls through map() under the spinning frame: the native stack of a sample is cut by
    its 16-KiB copy, the Python chain (copied apart) is whole. The stack merges what the native
    part reaches, says where native frames are missing (one gap frame), then the outer Python
    frames; it is marked incomplete."""
    python = present_or_skip(interp, ABSENT)
    minor = int(subprocess.run([python, "-c", "import sys; print(sys.version_info[1])"],
                               capture_output=True, text=True, timeout=60).stdout)
    proc, expected = watch_and_ask_cpython(pool, python, "deep")
    assert len(expected) > 80, expected
    for stack in proc["top_stacks"]:
        assert_python_frames(stack, expected, minor)
        names = [f["function"] for f in stack["frames"]]
        assert names.count(GAP) == 1, names
        assert stack["incomplete"] is True, stack
        assert "_PyEval_EvalFrameDefault" not in names, names
        # Native frames under the innermost Python ones: the merge reached into the cut stack.
        assert stack["frames"][0]["kind"] == "native" or names.index(GAP) > 1, names


@pytest.mark.parametrize("interp", INTERPRETERS, ids=[i[0] for i in INTERPRETERS])
def test_sampled_python_frames_equal_faulthandler(ebpf, pool, interp):  # noqa: F811
    python = present_or_skip(interp, ABSENT)
    version = subprocess.run([python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                             capture_output=True, text=True, timeout=60).stdout.strip()
    minor = int(version.split(".")[1])
    proc, expected, main = watch_and_ask_cpython(pool, python, main=True)
    assert not any("Python" in n for n in proc["notes"]), proc["notes"]
    # The main thread waits in join() since before the window: its wait has the Python frames
    # of that sleep (read while it slept, kept since it did not run), every line faulthandler's.
    waits = [w for w in proc["waits"] if w["tid"] == proc["pid"] and w["before_window"]]
    assert len(waits) == 1, proc["waits"]
    got = [(f["function"], f["file"], f["line"]) for f in waits[0]["frames"] if f["kind"] == "python"]
    assert [g[1:] for g in got] == [e[1:] for e in main], (got, main)
    assert all(same_function(minor, g[0], e[0]) for g, e in zip(got, main)), (got, main)
    assert got[-1][0] == "<module>" and (str(PROGRAM), lib.hs_line("py_burn.py", "main_join")) in \
        [g[1:] for g in got], got
    assert "_PyEval_EvalFrameDefault" not in [f["function"] for f in waits[0]["frames"]], waits
    assert proc["top_stacks"], proc
    for stack in proc["top_stacks"]:
        assert_python_frames(stack, expected, minor)
        # Merged: no eval-loop frame left, and native frames after the Python ones (the
        # thread's start in C), in one stack, which is whole.
        frames = stack["frames"]
        names = [f["function"] for f in frames]
        assert "_PyEval_EvalFrameDefault" not in names and GAP not in names, names
        last_py = max(i for i, f in enumerate(frames) if f["kind"] == "python")
        assert any(f["kind"] == "native" for f in frames[last_py + 1:]), names
        assert stack["incomplete"] is False, stack
    RAN.append("%s: CPython %s" % (interp[0], version))


TORCH_BURN = lib.program_source("torch_burn.py")


def test_a_sample_deep_in_torch_shows_the_python_line_that_called_it(ebpf, pool, tmp_path):  # noqa: F811
    """The main thread multiplies matrices with torch on one line: its most sampled stack is
    tens of native frames (BLAS, torch's dispatcher) above that line. The text shows the 12
    innermost frames, then the hidden native frames in one line, then the Python frames: the
    matmul line in burn() and <module> at its call. Oracle: CPython's faulthandler, asked after
    the window: the same Python frames, files and lines (its innermost line is one of the loop's:
    it may catch the loop outside the product)."""
    os.chmod(tmp_path, 0o755)
    target = pool.start(["/usr/bin/python3", str(TORCH_BURN), lib.READY, str(tmp_path)],
                        main_parked=False, timeout=120)
    run = lib.run_hangscan(["watch", "--pid", target.pid, "--for", "3"], timeout=120)
    assert run.rc == 0, run.describe()
    os.kill(target.pid, signal.SIGUSR1)
    dump = lib.wait_for(lambda: complete(str(tmp_path / "faulthandler.txt"), 1), 30,
                        "faulthandler to write the main thread")
    (expected,) = parse_faulthandler(dump).values()
    lines = run.stdout.splitlines()
    top = lines.index("  top on-CPU stacks:") + 2  # past the share line of the first stack
    stack = []
    for line in lines[top:]:
        if not line.startswith("      "):
            break
        stack.append(line.strip())
    mm = lib.hs_line("torch_burn.py", "burn_mm")
    python = [m.groups() for m in (re.fullmatch(r"(\S+) \((/\S+\.py):(\d+)\)", f) for f in stack) if m]
    got = [(name, path, int(line)) for name, path, line in python]
    assert got == [("burn", str(TORCH_BURN), mm),
                   ("<module>", str(TORCH_BURN), lib.hs_line("torch_burn.py", "module_burn"))], stack
    assert [g[:2] for g in got] == [e[:2] for e in expected], (got, expected)
    assert got[1:] == expected[1:], (got, expected)
    assert expected[0][2] in (mm, lib.hs_line("torch_burn.py", "burn_norm")), expected
    at = stack.index("burn (%s:%d)" % (TORCH_BURN, mm))
    # Deeper than the frames shown: the first 12 are native, then one line of hidden ones.
    assert at > 12 and not any(".py:" in f for f in stack[:12]), stack
    assert re.fullmatch(r"\.\.\. \d+ native frames?", stack[12]), stack


RANKS = lib.program_source("watch_ranks.py")
BURN = {lib.hs_line("watch_ranks.py", tag) for tag in ("burn_while", "burn_for", "burn_add")}


@pytest.mark.parametrize("interp", INTERPRETERS, ids=[i[0] for i in INTERPRETERS])
def test_a_process_that_execs_gets_the_new_programs_python_frames(ebpf, pool, interp, tmp_path):  # noqa: F811
    """A watched python3.11 replaces its program (exec) by INTERP burning in burn_cpu() while
    the watch records: the timeline says so, and the samples of the new program have its
    Python frames (its interpreter found again: the old one's addresses and layout would name
    nothing, or the wrong frames), merged."""
    exec_and_burn(pool, present_or_skip(interp, ABSENT), tmp_path, [])


def test_the_ptrace_fallback_sees_an_exec_too(ebpf, pool, tmp_path):  # noqa: F811
    """The same with the ptrace sampler (no exec event there: the process's auxiliary vector
    changes), into another CPython version where one is present."""
    others = [i[1] for i in INTERPRETERS if i[1] and not i[0].startswith("debian")]
    exec_and_burn(pool, others[-1] if others else "/usr/bin/python3", tmp_path, ["--ptrace"])


def exec_and_burn(pool, python, tmp_path, extra):  # noqa: F811
    """Watches a python3.11 that execs PYTHON burning in burn_cpu(); checks the report."""
    fifo = str(tmp_path / "go")
    os.mkfifo(fifo)
    target = pool.start(["/usr/bin/python3", str(RANKS), lib.READY, "exec", fifo, python], main_parked=True)
    hs = subprocess.Popen([lib.hangscan_bin(), "watch", "--pid", str(target.pid), "--for", "6", "--json"] + extra,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_recording(hs)
        with open(fifo, "wb") as go:
            go.write(b"x")
        out, err = hs.communicate(timeout=120)
    finally:
        kill_leftover(hs)
    assert hs.returncode == 0, err.decode()
    doc = json.loads(out)
    execs = [t for t in doc["timeline"] if t["kind"] == "exec"]
    # The path as exec was given it (eBPF), or where /proc/PID/exe leads (ptrace).
    assert [t["pid"] for t in execs] == [target.pid], doc["timeline"]
    assert execs[0]["path"] in (python, os.path.realpath(python)), execs
    # The most sampled stacks: each has the new program's Python frames, merged (no eval-loop
    # frame left), or none at all (sampled before its interpreter was found again: native
    # frames only); never other Python frames. At least one has them.
    proc = process(doc, target.pid)
    merged = 0
    for stack in proc["top_stacks"]:
        names = [f["function"] for f in stack["frames"]]
        python_frames = [(f["function"], f["line"]) for f in stack["frames"] if f["kind"] == "python"]
        if not python_frames:
            continue
        merged += 1
        assert [f for f, _ in python_frames] == ["burn_cpu", "main", "<module>"], stack["frames"]
        assert python_frames[0][1] in BURN, python_frames
        assert python_frames[2][1] == lib.hs_line("watch_ranks.py", "module_main"), python_frames
        assert "_PyEval_EvalFrameDefault" not in names, names
    assert merged > 0, (proc["notes"], proc["top_stacks"])
    assert target.alive()


@pytest.fixture(scope="module", autouse=True)
def versions_report(request):
    """After the module: which versions ran and which were skipped, printed past capture."""
    yield
    lib.print_past_capture(request, [
        "watch Python samples, python versions tested: " + ("; ".join(RAN) or "none"),
        "watch Python samples, skipped (absent): " + ("; ".join(ABSENT) or "none")])
