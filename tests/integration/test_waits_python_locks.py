"""Python lock owners (issue "Field truth", item 4): a thread blocked acquiring a
threading.RLock held by another thread of its process waits on that thread, and two RLocks
taken in opposite orders are a deadlock; a threading.Lock records no owner and is not guessed.

tests/programs/py_rlock_cycle.py: threads "post" and "audit" hold one RLock each and wait for
the other's at a known line; "clerk" waits for a threading.Lock the main thread holds; the main
thread joins "post". Run under Debian's python3.11, every pyenv 3.6-3.13 present (an absent
one is skipped and named) and Debian's python3.14 in HS_PY314_ROOT (run under chroot there, read
by its host pid, as in test_python_state.py; 3.14 parks a waiter in its parking lot). Oracles: the HS-LINE tags, the thread ids from the JSON's Python
thread names, and CPython's faulthandler (SIGUSR1) for the blocked threads' innermost frames.
"""

import os
import re
import shutil
import signal

import pytest

import hs_testlib as hs
from test_python import INTERPRETERS, present_or_skip
from test_python_faulthandler import complete, parse_faulthandler
from test_python_state import SID_ROOT, sid_interpreter

SOURCE = "py_rlock_cycle.py"
# pyenv's 3.14 and 3.15 builds are not read: only Debian's 3.14 was measured (sid root).
CASES = [i for i in INTERPRETERS if not i[0].startswith(("pyenv-3.14", "pyenv-3.15"))]
CASES.append(sid_interpreter())
INNER_DIR = "/hs-rlock"  # where the programs are copied inside the chroot


@pytest.fixture
def run_under(param, tmp_path):
    """argv (the interpreter, under chroot for the sid root), the program's path and the
    faulthandler file (inner path, outer path); an absent interpreter is skipped."""
    python = present_or_skip(param, [])
    if not param[0].startswith("sid"):
        fh = str(tmp_path / "faulthandler.txt")
        yield [python], str(hs.program_source(SOURCE)), fh, fh
        return
    inner = SID_ROOT + INNER_DIR
    os.makedirs(inner, exist_ok=True)
    for name in (SOURCE, "hs_rank_ready.py"):
        shutil.copy(str(hs.program_source(name)), inner)
    try:
        yield ["chroot", SID_ROOT, python], INNER_DIR + "/" + SOURCE, INNER_DIR + "/fh.txt", inner + "/fh.txt"
    finally:
        shutil.rmtree(inner, ignore_errors=True)


def innermost(thread):
    f = next(f for f in thread["frames"] if f["kind"] == "python")
    return f["function"].rsplit(".", 1)[-1], f["line"]


@pytest.mark.parametrize("param", CASES, ids=[c[0] for c in CASES])
def test_rlock_cycle_is_a_deadlock(targets, param, run_under):
    argv, program, inner_fh, fh = run_under
    target = targets.start(argv + [program, hs.READY, inner_fh], timeout=60)
    run = hs.dump(target.pid)
    assert run.rc == 0, run.describe()
    proc = hs.process_of(run.doc, target.pid)
    by = {t["python_name"]: t for t in proc["threads"]}
    post, audit, clerk = by["post"], by["audit"], by["clerk"]
    for t, owner in ((post, audit), (audit, post)):
        [edge] = t["waits_on"]
        assert re.fullmatch(rf"RLock 0x[0-9a-f]+ held by thread {owner['tid']}", edge["via"]), edge
        assert (edge["pid"], edge["tid"]) == (target.pid, owner["tid"])
    assert clerk["waits_on"] == [] and by["MainThread"]["waits_on"] == []  # Locks: no owner
    line = hs.hs_line(SOURCE, "second")
    first, second = sorted((post, audit), key=lambda t: t["tid"])
    a, b = first["python_name"], second["python_name"]
    assert run.doc["deadlocks"] == [
        f"thread {first['tid']} ({a}, {SOURCE}:{line}) waits for an RLock held by thread "
        f"{second['tid']} ({b}, {SOURCE}:{line}), which waits for one held by {first['tid']}"]
    # CPython's own account of the blocked threads' innermost frames
    os.kill(target.pid, signal.SIGUSR1)
    cpython = parse_faulthandler(hs.wait_for(lambda: complete(fh, 4), 30, "faulthandler"))
    ours = {innermost(t) for t in (post, audit, clerk)}
    assert ours == {("take", line), ("clerk", hs.hs_line(SOURCE, "clerk"))}
    assert ours <= {(frames[0][0], frames[0][2]) for frames in cpython.values()}
