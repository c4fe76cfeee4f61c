"""One odd target among good ones never loses the others (issue 12, section 3).

The odd target is a copy of Debian's python3.11 named `python3.99999999999`: the version in its
name does not fit an int, and once made every run print "hangscan: stoi" and exit 2 with nothing
for any pid. Now the name is simply no version hint: the interpreter's memory (Py_Version) says
3.11.2, and its Python frames are read like any other's.

Live and cores, each run also holds a target that really cannot be read (a zombie; a file that
is not a core): the good targets and the odd one are reported with exactly the frames the
interpreters themselves saw (py_hang.py's sys._current_frames view), the bad one is a diagnostic
of its own, and the exit code is 1 (partial).
"""

import json
import os
import shutil
import subprocess

import pytest

import core_testlib as ct
import hs_testlib as hs

PY_HANG = hs.program_source("py_hang.py")
DEBIAN_PYTHON = "/usr/bin/python3.11"

pytestmark = pytest.mark.skipif(not os.path.exists(DEBIAN_PYTHON), reason="Debian's python3.11 is missing")


def start_py_hang(pool, python, tmp_path, name):
    view_path = tmp_path / f"{name}-view.json"
    target = pool.start([python, str(PY_HANG), hs.READY, str(view_path)], timeout=60)
    raw = json.loads(view_path.read_text())
    raw.pop("spin", None)
    view = {int(tid): v for tid, v in raw.items()}
    assert len(view) >= 11, view.keys()
    return target, view


def python_frames(proc, tid):
    thread = [t for t in proc["threads"] if t["tid"] == tid]
    assert len(thread) == 1, f"thread {tid} missing from pid {proc['pid']}"
    return [[f["function"], f["file"], f["line"]] for f in thread[0]["frames"] if f["kind"] == "python"]


def assert_frames_as_seen(proc, view):
    assert proc["python"]["version"] == "3.11.2"
    assert not [d for d in proc["diagnostics"] if d["severity"] == "error"], proc["diagnostics"]
    for tid, seen in view.items():
        assert python_frames(proc, tid) == seen["frames"], f"pid {proc['pid']} thread {tid} ({seen['mark']})"


@pytest.fixture(scope="module")
def odd_and_good(module_targets, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("odd")
    odd_python = tmp / "python3.99999999999"
    shutil.copy2(DEBIAN_PYTHON, odd_python)
    odd = start_py_hang(module_targets, str(odd_python), tmp, "odd")
    good = start_py_hang(module_targets, DEBIAN_PYTHON, tmp, "good")
    return odd, good, tmp


def test_live_odd_among_good(odd_and_good):
    (odd, odd_view), (good, good_view), _ = odd_and_good
    zombie = subprocess.Popen(["true"])
    try:
        hs.wait_for(lambda: hs.process_state(zombie.pid) == "Z", 10, "the child to be a zombie")
        run = hs.dump([odd.pid, zombie.pid, good.pid])
    finally:
        zombie.wait()
    assert run.rc == 1, run.describe()
    assert "stoi" not in run.stderr and "internal error" not in run.stderr, run.describe()
    assert run.stderr.splitlines()[0] == f"hangscan: pid {zombie.pid} (true) is a zombie: it has exited"
    assert_frames_as_seen(hs.process_of(run.doc, odd.pid), odd_view)
    assert_frames_as_seen(hs.process_of(run.doc, good.pid), good_view)
    assert hs.process_of(run.doc, odd.pid)["cmdline"][0].endswith("/python3.99999999999")
    hs.assert_runs_on(odd.pid)
    hs.assert_runs_on(good.pid)


def test_live_odd_alone_is_complete(odd_and_good):
    (odd, odd_view), _, _ = odd_and_good
    run = hs.dump(odd.pid)
    assert run.rc == 0, run.describe()
    assert_frames_as_seen(hs.process_of(run.doc, odd.pid), odd_view)


def test_cores_odd_among_good(odd_and_good):
    (odd, odd_view), (good, good_view), tmp = odd_and_good
    odd_core = ct.gcore(odd.pid, tmp / "odd")
    good_core = ct.gcore(good.pid, tmp / "good")
    not_a_core = tmp / "core.notes"
    not_a_core.write_text("this is not a core\n")
    try:
        run = ct.hangscan_core([odd_core, not_a_core, good_core])
        assert run.rc == 1, run.describe()
        assert "stoi" not in run.stderr and "internal error" not in run.stderr, run.describe()
        assert [l for l in run.stderr.splitlines() if l.startswith("hangscan: ")] == [
            f"hangscan: {not_a_core}: not an ELF file"], run.describe()
        procs = {p["pid"]: p for p in run.doc["processes"]}
        assert sorted(procs) == sorted([odd.pid, good.pid])
        assert_frames_as_seen(procs[odd.pid], odd_view)
        assert_frames_as_seen(procs[good.pid], good_view)
    finally:
        odd_core.unlink()
        good_core.unlink()
