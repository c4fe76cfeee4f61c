"""hangscan's Python frames against CPython's own: faulthandler, on every Python of the machine.

tests/programs/py_faulthandler.py blocks five threads at known lines (a method in a recursion,
a closure, a generator, a lambda, the main thread) and registers faulthandler on SIGUSR1. Once
it says ready nothing in it moves: the test asks CPython (SIGUSR1: faulthandler walks every
thread state in C and writes "File ..., line N in NAME" per frame) and asks hangscan (`dump`,
then `gcore` and `core` of the same process), and every thread's Python frames must be equal:
same count, same order, same file and line, same function. faulthandler prints co_name; from
3.11 hangscan prints co_qualname, which is co_name or ends with "." + co_name: that is the one
difference allowed (and checked against the program's own qualified names).

Why SIGUSR1 and not faulthandler.dump_traceback_later(): a timer could fire before the main
thread reaches its line; a signal sent after "ready" cannot. Interpreters: Debian's
/usr/bin/python3.11 (required) and every $(pyenv root)/versions/3.* present; the last test
prints which ran and which were skipped because absent.
"""

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

PROGRAM = lib.program_source("py_faulthandler.py")


def line_of(tag):
    return lib.hs_line("py_faulthandler.py", tag)


RAN = []
ABSENT = []

# Qualified names (co_qualname, 3.11+) of the program's functions; co_name is the last part.
QUALNAMES = {"run": "Worker.run", "step": "Worker.step", "inner": "make_waiter.<locals>.inner",
             "<lambda>": "main.<locals>.<lambda>"}

# 3.14 adds the thread's name: "Thread 0x00007fa46ffb46c0 [audit] (most recent call first):".
HEADER = re.compile(r"^(?:Current thread|Thread) (0x[0-9a-f]+)(?: \[.*\])? \(most recent call first\):$")
FRAME = re.compile(r'^  File "(.*)", line (\d+) in (.*)$')


def parse_faulthandler(text):
    """{thread ident: [(function, file, line), ...]} from faulthandler's all-threads dump."""
    stacks = {}
    current = None
    for line in text.splitlines():
        if not line.strip():
            continue
        h = HEADER.match(line)
        if h:
            current = stacks.setdefault(int(h.group(1), 16), [])
            continue
        f = FRAME.match(line)
        assert f and current is not None, "unexpected faulthandler line %r in:\n%s" % (line, text)
        current.append((f.group(3), f.group(1), int(f.group(2))))
    return stacks


def complete(path, threads):
    """faulthandler's text once every thread is written: the main thread comes last (thread
    states are listed newest first) and ends with <module>."""
    text = lib.read_text(path) or ""
    headers = sum(1 for line in text.splitlines() if HEADER.match(line))
    return text if headers == threads and text.endswith(" in <module>\n") else None


def python_frames(thread):
    return [(f["function"], f["file"], f["line"]) for f in thread["frames"] if f["kind"] == "python"]


class Run:
    """One py_faulthandler.py process: CPython's account, then hangscan's (live and core)."""

    def __init__(self, pool, python, tmp, program=PROGRAM, args=()):
        self.version = subprocess.run(
            [python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
            capture_output=True, text=True, timeout=60).stdout.strip()
        self.minor = int(self.version.split(".")[1])
        self.target = pool.start([python, str(program), lib.READY, tmp, *args], timeout=60)
        with open(os.path.join(tmp, "threads.json")) as fh:
            self.tids = {int(k, 16): v for k, v in json.load(fh).items()}
        os.kill(self.target.pid, signal.SIGUSR1)
        text = lib.wait_for(lambda: complete(os.path.join(tmp, "faulthandler.txt"), len(self.tids)),
                            30, "faulthandler to write every thread")
        self.cpython = {self.tids[ident]: frames for ident, frames in parse_faulthandler(text).items()}
        live = lib.dump(self.target.pid)
        assert live.rc == 0, live.describe()
        self.live = lib.process_of(live.doc, self.target.pid)
        cores = os.path.join(tmp, "cores")
        os.mkdir(cores)
        gcore = lib.run_hangscan(["gcore", "--pid", self.target.pid, "-o", cores, "--json"], timeout=300)
        assert gcore.rc == 0, gcore.describe()
        core = lib.run_hangscan(["core", gcore.doc["path"], "--json"], timeout=300)
        assert core.rc == 0, core.describe()
        self.core = lib.process_of(core.doc, self.target.pid)
        lib.assert_runs_on(self.target.pid)

    def same_function(self, hangscan_name, co_name):
        if self.minor < 11:
            return hangscan_name == co_name
        return hangscan_name == QUALNAMES.get(co_name, co_name) or hangscan_name.endswith("." + co_name)


@pytest.fixture(scope="module", params=INTERPRETERS, ids=[i[0] for i in INTERPRETERS])
def run(request):
    ident = request.param[0]
    python = present_or_skip(request.param, ABSENT)
    tmp = tempfile.mkdtemp(prefix="hs-fh-")
    os.chmod(tmp, 0o755)
    try:
        with lib.TargetPool() as pool:
            r = Run(pool, python, tmp)
            RAN.append("%s: CPython %s" % (ident, r.version))
            yield r
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def assert_same_stacks(run, proc, what):
    assert set(run.cpython) == set(run.tids.values()), run.cpython
    for tid, expected in run.cpython.items():
        got = python_frames(lib.thread_by_tid(proc, tid))
        assert [f[1:] for f in got] == [f[1:] for f in expected], \
            "%s thread %d: hangscan %s, faulthandler %s" % (what, tid, got, expected)
        for (name, _, line), (co_name, _, _) in zip(got, expected):
            assert run.same_function(name, co_name), \
                "%s thread %d line %d: hangscan %r, faulthandler %r" % (what, tid, line, name, co_name)


def test_live_frames_equal_faulthandler(run):
    assert_same_stacks(run, run.live, "live")


def test_core_frames_equal_faulthandler(run):
    assert_same_stacks(run, run.core, "core")


def test_faulthandler_saw_the_marked_lines(run):
    """The oracle itself is at the known lines, so agreement is about the right frames."""
    here = str(PROGRAM)
    ours = {tid: [(fn, li) for fn, fi, li in frames if fi == here] for tid, frames in run.cpython.items()}
    main = ours[run.target.pid]
    assert main == [("main", line_of("main_block")), ("<module>", line_of("module_main"))]
    inner = sorted(frames[0] for tid, frames in ours.items() if tid != run.target.pid)
    assert inner == sorted([("step", line_of("worker_wait")), ("inner", line_of("closure_wait")),
                            ("slow_gen", line_of("gen_sleep")), ("cond_wait", line_of("cond_wait"))])
    worker = [frames for frames in ours.values() if frames[0][0] == "step"][0]
    assert worker == [("step", line_of("worker_wait"))] + [("step", line_of("step_recurse"))] * 3 + \
        [("run", line_of("run_calls_step"))]


@pytest.fixture(scope="module", autouse=True)
def versions_report(request):
    """After the module: which versions ran and which were skipped, printed past capture."""
    yield
    lib.print_past_capture(request, [
        "faulthandler differential, python versions tested: " + ("; ".join(RAN) or "none"),
        "faulthandler differential, skipped (absent): " + ("; ".join(ABSENT) or "none")])
