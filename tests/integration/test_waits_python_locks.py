"""Python lock owners (issue "Field truth", item 4): a thread blocked acquiring a
threading.RLock held by another thread of its process waits on that thread, and two RLocks
taken in opposite orders are a deadlock; a threading.Lock records no owner and is not guessed.

tests/programs/py_rlock_cycle.py: threads "post" and "audit" hold one RLock each and wait for
the other's at a known line; "clerk" waits for a threading.Lock the main thread holds; the main
thread joins "post". Run under Debian's python3.11 and every pyenv 3.6-3.13 present (an absent
one is skipped and named). Oracles: the HS-LINE tags, the thread ids from the JSON's Python
thread names, and CPython's faulthandler (SIGUSR1) for the blocked threads' innermost frames.
"""

import os
import re
import signal

import pytest

import hs_testlib as hs
from test_python import INTERPRETERS, present_or_skip
from test_python_faulthandler import complete, parse_faulthandler

SOURCE = "py_rlock_cycle.py"
# 3.14 keeps its RLock in a _PyRecursiveMutex, not a semaphore: not read (docs/ranks.md).
CASES = [i for i in INTERPRETERS if not i[0].startswith(("pyenv-3.14", "pyenv-3.15"))]


def innermost(thread):
    f = next(f for f in thread["frames"] if f["kind"] == "python")
    return f["function"].rsplit(".", 1)[-1], f["line"]


@pytest.mark.parametrize("param", CASES, ids=[c[0] for c in CASES])
def test_rlock_cycle_is_a_deadlock(targets, tmp_path, param):
    python = present_or_skip(param, [])
    fh = tmp_path / "faulthandler.txt"
    target = targets.start([python, hs.program_source(SOURCE), hs.READY, str(fh)])
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
    cpython = parse_faulthandler(hs.wait_for(lambda: complete(str(fh), 4), 30, "faulthandler"))
    ours = {innermost(t) for t in (post, audit, clerk)}
    assert ours == {("take", line), ("clerk", hs.hs_line(SOURCE, "clerk"))}
    assert ours <= {(frames[0][0], frames[0][2]) for frames in cpython.values()}
