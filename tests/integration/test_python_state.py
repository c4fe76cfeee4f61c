"""Thread names, local values, exact positions and interpreter state of real CPython processes,
live and from cores, for every interpreter on the machine (Debian's /usr/bin/python3.11,
required, and each $(pyenv root)/versions/3.* present).

tests/programs/py_state.py blocks named threads at marked lines and writes the interpreter's
own view first: each thread's name (threading.current_thread().name) and, from 3.11, each
frame's (line, end_line, column, end_column) as code.co_positions() reports it at f_lasti.
The tests assert hangscan's JSON and text against that view:
  - python_name of every thread (ASCII, non-ASCII, a Thread subclass, MainThread);
  - --locals renders values like repr(), bounded (exact strings for 20 values);
  - column/end_line/end_column/source of every Python frame (null before 3.11), and the text
    report's marker under the running call;
  - a finalizer blocked inside gc.collect(): garbage collecting on that thread;
  - a finalizer blocked while the interpreter shuts down: finalizing, no Python frame;
  - the same names, values and positions from a core written by `hangscan gcore`.

A real CPython 3.14 is tested too when HS_PY314_ROOT names a root holding /usr/bin/python3.14
with /proc bound in it (Debian sid, see docs/python-versions.md): the program runs under
chroot there while hangscan reads it from outside by its host pid (its files through
/proc/PID/root; its core with --sysroot).
"""

import json
import os
import re
import shutil
import subprocess

import pytest

import core_testlib as ct
import hs_testlib as lib
import test_python as tp

PY_STATE = lib.program_source("py_state.py")
SID_ROOT = os.environ.get("HS_PY314_ROOT", "")
INNER_DIR = "/hs-py-state"   # where the program is copied inside a chroot


def sid_interpreter():
    if not SID_ROOT:
        return ("sid-chroot-3.14", None, "HS_PY314_ROOT not set")
    if not os.path.exists(os.path.join(SID_ROOT, "usr/bin/python3.14")):
        return ("sid-chroot-3.14", None, "no usr/bin/python3.14 under " + SID_ROOT)
    if not os.path.exists(os.path.join(SID_ROOT, "proc/self")):
        return ("sid-chroot-3.14", None, "/proc is not bound in " + SID_ROOT)
    return ("sid-chroot-3.14", "/usr/bin/python3.14", "")


INTERPRETERS = tp.INTERPRETERS + [sid_interpreter()]


def marks():
    tag = re.compile("# " + "MARK " + r"([a-z_]+)\s*$")
    out = {}
    for lineno, line in enumerate(PY_STATE.read_text().splitlines(), 1):
        m = tag.search(line)
        if m:
            out[m.group(1)] = lineno
    return out


MARKS = marks()
SOURCE = PY_STATE.read_text().splitlines()

# repr() of the locals of values_frame, in order ('obj' is checked by pattern).
VALUES = [
    ("ints", "[-1234, 5678]"),
    ("letters", "('a', 'b', 'c')"),
    ("mapping", "{'a': False, 'b': (1, 2, 3)}"),
    ("many", "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ... 990 more]"),
    ("small_set", "{1, 2, 3}"),
    ("empty_set", "set()"),
    ("frozen", "frozenset()"),
    ("text", "'h\u00e9llo w\u00f6rld \u2713'"),
    ("quote", "\"it's\""),
    ("raw", "b\"\\x00ab\\xff'\""),
    ("huge", str(3 ** 100)),
    ("negbig", str(-(2 ** 64))),
    ("tenth", "0.1"),
    ("large", "1e+16"),
    ("neg_zero", "-0.0"),
    ("nested", "[[1, [2, [...]]]]"),
    ("obj", None),
    ("empty", "()"),
    ("single", "(1,)"),
    ("nothing", "None"),
]


class Run:
    def __init__(self, pool, python, tmp, mode):
        self.root = python.root
        prefix = ["chroot", self.root] if self.root else []
        info = subprocess.run(prefix + [python.path, "-c", "import sys; print(sys.version_info[1])"],
                              capture_output=True, text=True, timeout=60)
        self.minor = int(info.stdout)
        self.program = str(PY_STATE)
        self.view_path = os.path.join(tmp, "view-%s.json" % mode)
        inner_view = self.view_path
        if self.root:
            os.makedirs(self.root + INNER_DIR, exist_ok=True)
            shutil.copy(str(PY_STATE), self.root + INNER_DIR)
            self.program = INNER_DIR + "/py_state.py"
            inner_view = "/tmp/hs-view-%d-%s.json" % (os.getpid(), mode)
            self.view_path = self.root + inner_view
        self.target = pool.start(prefix + [python.path, self.program, lib.READY, mode, inner_view],
                                 timeout=60)
        self.view = {}
        if os.path.exists(self.view_path):
            with open(self.view_path) as fh:
                self.view = {int(k): v for k, v in json.load(fh).items()}

    def dump(self, *extra, as_json=True):
        run = lib.dump(self.target.pid, *extra, as_json=as_json)
        assert run.rc == 0, run.describe()
        return run


class Python:
    def __init__(self, path, root):
        self.path = path
        self.root = root


@pytest.fixture(scope="module", params=INTERPRETERS, ids=[i[0] for i in INTERPRETERS])
def python(request):
    ident, path, reason = request.param
    if path is None:
        if ident.startswith("debian"):
            pytest.fail(reason + ": Debian 12's python3.11 must be tested")
        pytest.skip("absent: " + reason)
    return Python(path, SID_ROOT if ident.startswith("sid") else None)


@pytest.fixture(scope="module")
def threads_run(python, tmp_path_factory):
    with lib.TargetPool() as pool:
        r = Run(pool, python, str(tmp_path_factory.mktemp("state")), "threads")
        r.doc = lib.process_of(r.dump("--locals").doc, r.target.pid)
        r.text = r.dump(as_json=False).stdout
        yield r


def thread(proc, tid):
    hits = [t for t in proc["threads"] if t["tid"] == tid]
    assert len(hits) == 1, "thread %d not in report" % tid
    return hits[0]


def check_names(run, proc):
    assert len(run.view) == 5
    for tid, seen in run.view.items():
        assert thread(proc, tid)["python_name"] == seen["name"], seen["key"]
    names = sorted(seen["name"] for seen in run.view.values())
    assert names == sorted(["MainThread", "CustomThreadName-3", "pt_autograd_0",
                            "w\u00f6rker-\u03bb", "subclassed worker"])


def check_values(proc, tid):
    frame = [f for f in thread(proc, tid)["frames"] if f["kind"] == "python"][0]
    assert frame["function"] == "values_frame"
    got = [(l["name"], l["value"]) for l in frame["locals"]]
    assert [n for n, _ in got] == [n for n, _ in VALUES]
    for (name, value), (_, want) in zip(got, VALUES):
        if want is None:
            assert re.fullmatch(r"<Custom at 0x[0-9a-f]+>", value), value
        else:
            assert value == want, name


def check_positions(run, proc):
    for tid, seen in run.view.items():
        if seen["key"] == "main":   # it wrote the view: its own frames were elsewhere then
            continue
        frames = [f for f in thread(proc, tid)["frames"] if f["kind"] == "python"]
        assert [f["line"] for f in frames] == [s[1] for s in seen["frames"]], seen["key"]
        for f, (_, line, pos) in zip(frames, seen["frames"]):
            got = [f["line"], f["end_line"], f["column"], f["end_column"]]
            if run.minor < 11:
                assert pos is None and got[1:] == [None, None, None]
                assert f["source"] is None
                continue
            assert got == pos, (seen["key"], f["function"])
            if f["file"] == run.program:
                assert f["source"] == SOURCE[line - 1]


def test_thread_names(threads_run):
    check_names(threads_run, threads_run.doc)
    text = threads_run.text
    for seen in threads_run.view.values():
        assert re.search(r'^Thread \d+ "[^"]*" \(Python "%s"' % re.escape(seen["name"]), text,
                         re.M), seen["name"]


def test_local_values_like_repr(threads_run):
    tid = next(t for t, v in threads_run.view.items() if v["key"] == "values")
    check_values(threads_run.doc, tid)


def test_exact_positions_and_marker(threads_run):
    check_positions(threads_run, threads_run.doc)
    if threads_run.minor < 11:
        return
    line = SOURCE[MARKS["expression"] - 1]
    col = line.index("block_in(NEVER)")
    indent = len(line) - len(line.lstrip())
    marker = " " * (col - indent) + "^" * len("block_in(NEVER)")
    lines = threads_run.text.splitlines()
    at = [i for i, l in enumerate(lines) if l.strip() == line.strip()]
    assert at, "source line of the expression not in the text report"
    prefix = lines[at[0]][:len(lines[at[0]]) - len(line.strip())]
    assert lines[at[0] + 1] == prefix + marker


def test_garbage_collecting(python, tmp_path):
    with lib.TargetPool() as pool:
        run = Run(pool, python, str(tmp_path), "gc")
        proc = lib.process_of(run.dump().doc, run.target.pid)
        text = run.dump(as_json=False).stdout
    assert proc["python"]["gc_collecting"] is True
    assert proc["python"]["finalizing"] is False
    main = thread(proc, run.target.pid)
    assert main["gc_collecting"] is True
    frames = [(f["function"], f["line"]) for f in main["frames"] if f["kind"] == "python"]
    own = "Cycle.__del__" if run.minor >= 11 else "__del__"
    assert frames == [(own, MARKS["gc_del"]),
                      ("gc_mode", MARKS["gc_collect"]), ("main", frames[2][1]),
                      ("<module>", MARKS["module_main"])]
    assert [t["tid"] for t in proc["threads"] if t["gc_collecting"]] == [run.target.pid]
    assert "garbage collecting" in text


def test_shutting_down(python, tmp_path):
    with lib.TargetPool() as pool:
        run = Run(pool, python, str(tmp_path), "shutdown")
        proc = lib.process_of(run.dump().doc, run.target.pid)
        text = run.dump(as_json=False).stdout
    assert proc["python"]["finalizing"] is True
    main = thread(proc, run.target.pid)
    assert main["finalizing"] is True
    assert main["python_idle"] is False
    assert not [f for f in main["frames"] if f["kind"] == "python"]
    assert "the interpreter is shutting down" in text


def test_from_a_core(threads_run, tmp_path):
    """`hangscan gcore` of the live process, then `hangscan core --locals`: same names, values
    and positions as the interpreter's own view."""
    run = lib.run_hangscan(["gcore", "--pid", str(threads_run.target.pid), "-o", str(tmp_path),
                            "--json"], timeout=300)
    assert run.rc == 0, run.describe()
    extra = ["--sysroot", threads_run.root] if threads_run.root else []
    core = ct.hangscan_core([run.doc["path"]], "--locals", *extra)
    assert core.rc == 0, core.describe()
    proc = ct.only_process(core.doc)
    check_names(threads_run, proc)
    tid = next(t for t, v in threads_run.view.items() if v["key"] == "values")
    check_values(proc, tid)
    check_positions(threads_run, proc)
    os.unlink(run.doc["path"])
