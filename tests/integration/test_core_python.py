"""`hangscan core` on real cores of CPython processes, for every interpreter on the machine
(Debian's /usr/bin/python3.11, required, and each $(pyenv root)/versions/3.* present):

  - a ctypes call that dereferences NULL: the Python frames that made the call, the native
    frames above them (memmove, libffi, _ctypes), "SIGSEGV at address 0x0", and the ctypes
    sentence;
  - tests/programs/py_hang.py (threads blocked at known lines) killed with SIGSEGV: every
    thread's Python stack exactly as the interpreter saw it (its own sys._current_frames view)
    and exactly as live mode (`hangscan dump`) showed it a moment before.
"""

import json
import os
import signal
import subprocess

import pytest

import core_testlib as ct
import hs_testlib as hs
import test_python as tp

CTYPES = "py_ctypes_crash.py"


def version_of(python):
    out = subprocess.run([python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                         capture_output=True, text=True, timeout=60)
    return out.stdout.strip()


def qual(version, qualname):
    """hangscan shows co_qualname from 3.11 on, else co_name (as test_python does)."""
    return qualname if int(version.split(".")[1]) >= 11 else qualname.rsplit(".", 1)[-1]


@pytest.fixture(scope="module")
def cores():
    with ct.CoreDir() as d:
        yield d


@pytest.fixture(params=tp.INTERPRETERS, ids=[i[0] for i in tp.INTERPRETERS])
def python(request):
    ident, path, reason = request.param
    if path is None:
        if ident.startswith("debian"):
            pytest.fail(reason + ": Debian 12's python3.11 must be tested")
        pytest.skip("absent: " + reason)
    return path


def test_ctypes_null_dereference(cores, python):
    script = str(hs.program_source(CTYPES))
    core, pid = cores.crash([python, script, "1"], signal.SIGSEGV, env={"RANK": "0"})
    run = ct.hangscan_core([core])
    assert run.rc == 0, run.describe()
    p = ct.only_process(run.doc)
    assert p["python"]["version"] == version_of(python)
    assert p["signal"]["address"] == "0x0" and p["signal"]["name"] == "SIGSEGV"
    t = ct.crashed_thread(p)
    assert t["tid"] == pid
    assert ct.python_frames(t) == [
        ("read_header", script, hs.hs_line(CTYPES, "memmove")),
        ("load_record", script, hs.hs_line(CTYPES, "load_record")),
        ("<module>", script, hs.hs_line(CTYPES, "main")),
    ]
    kinds = [f["kind"] for f in t["frames"]]
    first_py = kinds.index("python")
    natives_above = [f["function"] for f in t["frames"][:first_py]]
    assert "mem" in natives_above[0], natives_above      # libc's memmove/memcpy variant
    assert "ffi_call" in natives_above, natives_above
    assert any(f["kind"] != "python" for f in t["frames"][first_py:]), "no native frames below"
    line = hs.hs_line(CTYPES, "memmove")
    assert p["annotations"][0].startswith("SIGSEGV at address 0x0: a null pointer dereference in ")
    assert p["annotations"][1] == (
        f"the native code was called from Python through ctypes, by read_header ({CTYPES}:{line})")


def test_threads_killed_with_sigsegv_as_live(cores, python, targets, tmp_path):
    view_path = tmp_path / "self-view.json"
    version = version_of(python)
    target = targets.start([python, str(tp.PY_HANG), hs.READY, str(view_path)], timeout=60)
    view = {int(k): v for k, v in json.loads(view_path.read_text()).items()
            if k != "spin"}
    live_run = hs.dump(target.pid)
    assert live_run.rc == 0, live_run.describe()
    live = hs.process_of(live_run.doc, target.pid)

    core = cores.kill_for_core(target, signal.SIGSEGV)
    run = ct.hangscan_core([core])
    assert run.rc == 0, run.describe()
    p = ct.only_process(run.doc)
    assert p["python"]["version"] == version
    assert p["annotations"][0] == (
        f"SIGSEGV was sent by another process (pid {os.getpid()}) with kill(): the program did "
        "not fault, it was killed")
    assert sorted(t["tid"] for t in p["threads"]) == sorted(t["tid"] for t in live["threads"])
    assert len(view) >= 11
    for tid, seen in view.items():
        want = [(qual(version, f[0]), f[1], f[2]) for f in seen["frames"]]
        got = ct.python_frames(ct.thread_by_tid(p, tid))
        assert got == want, f"thread {tid} ({seen['mark']})"
        live_frames = [(f["function"], f["file"], f["line"])
                       for f in ct.thread_by_tid(live, tid)["frames"] if f["kind"] == "python"]
        assert got == live_frames, f"thread {tid} ({seen['mark']}) differs from live mode"
