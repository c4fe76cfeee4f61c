"""Python frames of real CPython processes: every interpreter found on the machine.

tests/programs/py_hang.py blocks threads at lines marked "# MARK name" and, before saying
ready, writes the interpreter's own view of every blocked thread's stack (sys._current_frames).
For each interpreter (Debian's stripped /usr/bin/python3.11, required, and every
$(pyenv root)/versions/3.* present) the tests assert, against both oracles:
  - every Python frame of every blocked thread: exact function (qualified where the version has
    co_qualname), file and line, in order;
  - --native: the merge replaced every eval-loop frame, kept the Python order, and the C function
    a thread blocks in sits under the Python frame that called it;
  - --locals: the values of a loop's locals (the counter i == 41 among them);
  - --nonblocking reads the same frames and says it may be inconsistent.
The last test prints which versions ran and which were skipped because absent.
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import hs_testlib as lib

PY_HANG = lib.program_source("py_hang.py")
MINORS = range(6, 15)   # pyenv versions looked for; an absent one is listed as skipped
RAN = []
ABSENT = []


def pyenv_root():
    if os.environ.get("PYENV_ROOT"):
        return Path(os.environ["PYENV_ROOT"])
    exe = shutil.which("pyenv")
    if exe:
        try:
            out = subprocess.run([exe, "root"], capture_output=True, text=True, timeout=20)
            if out.returncode == 0 and out.stdout.strip():
                return Path(out.stdout.strip())
        except (OSError, subprocess.TimeoutExpired):
            pass
    return Path(os.path.expanduser("~/.pyenv"))


def interpreters():
    """(id, python path or None when absent, reason)."""
    found = [("debian-3.11", "/usr/bin/python3.11" if os.path.exists("/usr/bin/python3.11")
              else None, "Debian /usr/bin/python3.11 missing")]
    versions = pyenv_root() / "versions"
    for minor in MINORS:
        builds = sorted(versions.glob("3.%d.*" % minor)) if versions.is_dir() else []
        builds = [b for b in builds if (b / "bin" / "python3").exists()]
        if builds:
            found.append(("pyenv-" + builds[-1].name, str(builds[-1] / "bin" / "python3"), ""))
        else:
            found.append(("pyenv-3.%d" % minor, None, "no pyenv 3.%d build under %s"
                          % (minor, versions)))
    return found


INTERPRETERS = interpreters()


def present_or_skip(param, absent):
    """The python of an INTERPRETERS entry; an absent one is added to `absent` and skipped
    (except Debian's python3.11, which must be there)."""
    ident, python, reason = param
    if python is None:
        if ident.startswith("debian"):
            pytest.fail(reason + ": Debian 12's python3.11 must be tested")
        absent.append("%s (%s)" % (ident, reason))
        pytest.skip("absent: " + reason)
    return python


def marks():
    tag = re.compile("# " + "MARK " + r"([a-z_]+)\s*$")
    out = {}
    for lineno, line in enumerate(PY_HANG.read_text().splitlines(), 1):
        m = tag.search(line)
        if m:
            out[m.group(1)] = lineno
    return out


MARKS = marks()


class Run:
    """One py_hang.py process under one interpreter, dumped in every mode."""

    def __init__(self, pool, python, tmp):
        self.python = python
        info = subprocess.run([python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                              capture_output=True, text=True, timeout=60)
        self.version = info.stdout.strip()
        self.minor = int(self.version.split(".")[1])
        view = os.path.join(tmp, "self-view.json")
        self.target = pool.start([python, str(PY_HANG), lib.READY, view, "--spin"], timeout=60)
        with open(view) as fh:
            raw = json.load(fh)
        self.spin_tid = raw.pop("spin")
        self.view = {int(k): v for k, v in raw.items()}
        self.plain = self.dump()
        self.native = self.dump("--native")
        self.locals = self.dump("--locals")
        self.nonblocking = self.dump("--nonblocking")

    def dump(self, *extra):
        run = lib.dump(self.target.pid, *extra)
        assert run.rc == 0, run.describe()
        return lib.process_of(run.doc, self.target.pid)

    def qual(self, qualname):
        """The name hangscan shows: the qualified name from 3.11 (co_qualname), else co_name."""
        return qualname if self.minor >= 11 else qualname.rsplit(".", 1)[-1]


@pytest.fixture(scope="module", params=INTERPRETERS, ids=[i[0] for i in INTERPRETERS])
def run(request, tmp_path_factory):
    ident = request.param[0]
    python = present_or_skip(request.param, ABSENT)
    with lib.TargetPool() as pool:
        r = Run(pool, python, str(tmp_path_factory.mktemp(ident)))
        RAN.append("%s: CPython %s" % (ident, r.version))
        yield r


def thread(proc, tid):
    hits = [t for t in proc["threads"] if t["tid"] == tid]
    assert len(hits) == 1, "thread %d not in report" % tid
    return hits[0]


def python_frames(t):
    return [f for f in t["frames"] if f["kind"] == "python"]


def triple(f):
    return [f["function"], f["file"], f["line"]]


def test_version_and_locator(run):
    assert run.plain["python"]["version"] == run.version
    assert run.plain["python"]["nonblocking"] is False


def test_every_frame_matches_the_interpreters_own_view(run):
    for tid, view in run.view.items():
        t = thread(run.plain, tid)
        got = [triple(f) for f in t["frames"]]
        expected = [[run.qual(fn), fi, li] for fn, fi, li in view["frames"]]
        assert got == expected, "thread %d (%s)" % (tid, view["mark"])
        assert all(f["kind"] == "python" for f in t["frames"])
        assert t["gil"] is False   # every thread is blocked: nobody holds the GIL


def test_gil_holder_and_idle_thread(run):
    """The spinning thread holds the GIL (every other thread is blocked in C with the GIL
    released); the thread started on time.sleep itself has a thread state and no frame."""
    proc = run.plain
    holders = [t["tid"] for t in proc["threads"] if t["gil"]]
    # Right after "ready" the main thread may still take the GIL once on its way to its lock:
    # then a later dump sees the spinner again. Bounded retries, not a sleep.
    for _ in range(5):
        if holders == [run.spin_tid]:
            break
        assert holders in ([], [run.target.pid]), holders
        proc = run.dump()
        holders = [t["tid"] for t in proc["threads"] if t["gil"]]
    assert holders == [run.spin_tid]
    spin = python_frames(thread(run.plain, run.spin_tid))
    assert spin[0]["function"] == "spin"
    assert spin[0]["line"] in (MARKS["spin_loop"], MARKS["spin_add"])
    idle = [t for t in run.plain["threads"] if t["python_idle"]]
    assert len(idle) == 1, [t["tid"] for t in idle]
    assert not python_frames(idle[0])
    assert all(t["python_idle"] is False for t in run.plain["threads"]
               if t["tid"] in run.view or t["tid"] == run.target.pid)


def test_blocked_lines_are_the_marked_lines(run):
    here = str(PY_HANG)
    own = {"event_wait": "wait_event", "lock_acquire": "acquire_lock", "time_sleep": "sleep_long",
           "select": "select_wait", "socket_accept": "accept_wait", "queue_get": "queue_get",
           "recurse_bottom": "recurse", "gen_block": "gen_blocker", "coro_inner": "inner_coro",
           "ctypes_pause": "c_blocker", "counter_wait": "counter_loop"}
    for tid, view in run.view.items():
        frames = [f for f in thread(run.plain, tid)["frames"] if f["file"] == here]
        mark = view["mark"]
        assert frames[0]["function"] == own[mark]
        assert frames[0]["line"] == MARKS[mark], mark
        if mark == "recurse_bottom":
            assert [f["line"] for f in frames] == [MARKS["recurse_bottom"]] + [MARKS["recurse_call"]] * 50
        if mark == "gen_block":
            assert triple(frames[1])[::2] == ["consume_gen", MARKS["gen_consume"]]
        if mark == "coro_inner":
            assert triple(frames[1])[::2] == ["outer_coro", MARKS["coro_outer"]]
            assert triple(frames[2])[::2] == ["run_coro", MARKS["coro_run"]]
    main = thread(run.plain, run.target.pid)
    assert [triple(f)[::2] for f in main["frames"]] == [["main", MARKS["main_block"]],
                                                        ["<module>", MARKS["module_main"]]]
    assert main["frames"][0]["file"] == here


# The C function each thread blocks in (libc names: present even in stripped binaries).
C_CALLEE = {
    "time_sleep": r"nanosleep|select",
    "select": r"select",
    "socket_accept": r"accept",
    "ctypes_pause": r"^pause$|__libc_pause|__pause",
    "lock_acquire": r"sem_|futex",
    "counter_wait": r"sem_|futex",
}


def test_native_merge_keeps_call_order(run):
    for tid, view in list(run.view.items()) + [(run.target.pid, None)]:
        t = thread(run.native, tid)
        frames = t["frames"]
        assert not [n for n in t.get("notes", []) if "not merged" in n], t.get("notes")
        # The Python frames are the same, in the same order, as without --native.
        assert [triple(f) for f in python_frames(t)] == \
            [triple(f) for f in thread(run.plain, tid)["frames"]]
        # Every eval-loop frame was replaced by the Python frames it ran.
        assert not [f for f in frames if f["kind"] == "native"
                    and f["function"].split(".")[0] == "_PyEval_EvalFrameDefault"]
        first_py = next(i for i, f in enumerate(frames) if f["kind"] == "python")
        last_py = max(i for i, f in enumerate(frames) if f["kind"] == "python")
        assert first_py > 0, "no native frame under the innermost Python frame"
        if view is not None and view["mark"] in C_CALLEE:
            pattern = re.compile(C_CALLEE[view["mark"]])
            callee = [i for i, f in enumerate(frames[:first_py]) if pattern.search(f["function"])]
            assert callee, "%s: no %s frame under %s: %s" % (
                view["mark"], C_CALLEE[view["mark"]], frames[first_py]["function"],
                [f["function"] for f in frames[:first_py]])
        # The thread's entry (start_thread / main) is below the outermost Python frame.
        tail = [f["function"] for f in frames[last_py + 1:]]
        entry = r"start_thread|clone" if view is not None else r"^main$|__libc_start|_start"
        assert any(re.search(entry, fn) for fn in tail), tail


def test_locals_of_the_loop_and_the_recursion(run):
    tid = next(t for t, v in run.view.items() if v["mark"] == "counter_wait")
    frame = python_frames(thread(run.locals, tid))[0]
    assert frame["function"] == "counter_loop"
    got = [(l["name"], l["value"]) for l in frame["locals"]]
    assert re.fullmatch(r"<_thread\.lock at 0x[0-9a-f]+>", got[0][1]), got[0]
    assert got[1:] == [
        ("label", "'counter'"), ("ratio", "1.5"),
        ("items", "[1, 2, 3]"), ("pair", "(4, 5)"), ("blob", "b'xyz'"),
        ("flag", "True"), ("nothing", "None"), ("big", "1180591620717411303424"),
        ("neg", "-5"), ("long_text", "'" + "y" * 60 + "...'"), ("table", "{'a': 1}"),
        ("i", "41")]
    tid = next(t for t, v in run.view.items() if v["mark"] == "recurse_bottom")
    depth = [l["value"] for f in python_frames(thread(run.locals, tid))
             if f["function"] == "recurse" for l in f["locals"] if l["name"] == "n"]
    assert depth == [str(n) for n in range(51)]
    # Without --locals, no locals.
    assert all(not f["locals"] for t in run.plain["threads"] for f in t["frames"])


def test_nonblocking_reads_the_same_frames(run):
    assert run.nonblocking["python"]["nonblocking"] is True
    for tid in run.view:
        assert [triple(f) for f in python_frames(thread(run.nonblocking, tid))] == \
            [triple(f) for f in thread(run.plain, tid)["frames"]]


def test_not_python_gets_native_stacks_and_no_error(targets):
    t = targets.start(["sleep", "1000"], ready=None)
    res = lib.dump(t.pid, "--verbose")
    assert res.rc == 0, res.describe()
    proc = lib.process_of(res.doc, t.pid)
    assert proc.get("python") is None
    assert not proc["diagnostics"]
    assert proc["threads"][0]["frames"]


@pytest.fixture(scope="module", autouse=True)
def versions_report(request):
    """After the module: which versions ran and which were skipped, printed past capture."""
    yield
    lib.print_past_capture(request, ["python versions tested: " + ("; ".join(RAN) or "none"),
                                     "python versions skipped (absent): " + ("; ".join(ABSENT) or "none")])
