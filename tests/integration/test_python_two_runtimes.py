"""Python frames of a process that maps two CPython runtimes, against faulthandler.

A C extension linked against libpython3.X.so (built here, for each interpreter) calls back
into Python; tests/programs/py_ext_callback.py blocks two threads in Python code called from C
through it. Under Debian's /usr/bin/python3.11 (its runtime linked in statically) the extension
brings /usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0 along: a second runtime, never
initialized, whose symbols the executable's interpose. hangscan must read the live one: every
thread's Python frames equal faulthandler's, live and from a core, and `--native` puts the
extension's C function between the Python frames it sits between. Under the pyenv builds
(--enable-shared) the extension links the libpython the interpreter already runs: one runtime,
which must still read the same. The last test prints which versions ran and which were skipped.
"""

import os
import re
import shutil
import subprocess
import tempfile

import pytest

import hs_testlib as lib
from test_python import INTERPRETERS, present_or_skip
import test_python_faulthandler as faulthandler_test
from test_watch import ebpf  # noqa: F401 (fixture)
from test_python_faulthandler import assert_same_stacks, python_frames

PROGRAM = lib.program_source("py_ext_callback.py")
RAN = []
ABSENT = []

EXTENSION = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
/* call(fn): calls fn() from C, so fn's frames run in a new eval-loop call under this one. */
static PyObject* hs_callback_call(PyObject* self, PyObject* fn) {
  (void)self;
  return PyObject_CallObject(fn, NULL);
}
static PyMethodDef methods[] = {{"call", hs_callback_call, METH_O, "fn() from C"},
                                {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "hs_callback", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};
PyMODINIT_FUNC PyInit_hs_callback(void) { return PyModule_Create(&module); }
"""


def line_of(tag):
    return lib.hs_line("py_ext_callback.py", tag)


def build_extension(python, out_dir):
    """hs_callback.so linked against the interpreter's libpython3.X.so; its path."""
    info = subprocess.run([python, "-c", "import sysconfig as s; print(s.get_paths()['include']);"
                           "print(s.get_config_var('LIBDIR')); print(s.get_config_var('LDLIBRARY'))"],
                          capture_output=True, text=True, timeout=60, check=True).stdout.split("\n")
    include, libdir, ldlibrary = info[0], info[1], info[2]
    libpython = os.path.join(libdir, ldlibrary)
    if not os.path.exists(libpython) or not ldlibrary.endswith(".so"):
        pytest.fail("no shared libpython for %s at %s (tools/deps.sh test installs "
                    "libpython3.11-dev)" % (python, libpython))
    src = os.path.join(out_dir, "hs_callback.c")
    with open(src, "w") as fh:
        fh.write(EXTENSION)
    so = os.path.join(out_dir, "hs_callback.so")
    # No sibling calls: hs_callback_call must keep its frame under the Python it calls.
    subprocess.run(["gcc", "-O2", "-g", "-fno-optimize-sibling-calls", "-shared", "-fPIC",
                    "-I", include, "-o", so, src, libpython, "-Wl,-rpath," + libdir],
                   check=True, timeout=120)
    return so


def python_modules(pid):
    """The CPython modules the process maps: the executable and every libpython."""
    with open("/proc/%d/maps" % pid) as fh:
        paths = {line.split()[-1] for line in fh if "/" in line}
    return sorted(p for p in paths if re.search(r"/(lib)?python3\.\d+[a-z]*(\.so[.0-9]*)?$", p))


class Run(faulthandler_test.Run):
    """One py_ext_callback.py process: CPython's account, then hangscan's (live, core, and
    --native)."""

    def __init__(self, pool, python, tmp):
        build_extension(python, tmp)
        super().__init__(pool, python, tmp, PROGRAM, (tmp,))
        self.modules = python_modules(self.target.pid)
        run = lib.dump(self.target.pid, "--native")
        assert run.rc == 0, run.describe()
        self.native = lib.process_of(run.doc, self.target.pid)


@pytest.fixture(scope="module", params=INTERPRETERS, ids=[i[0] for i in INTERPRETERS])
def run(request):
    ident = request.param[0]
    python = present_or_skip(request.param, ABSENT)
    tmp = tempfile.mkdtemp(prefix="hs-2rt-")
    os.chmod(tmp, 0o755)
    try:
        with lib.TargetPool() as pool:
            r = Run(pool, python, tmp)
            RAN.append("%s: CPython %s (%s)" % (ident, r.version,
                                                ", ".join(os.path.basename(m) for m in r.modules)))
            yield r
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_debian_python_maps_two_runtimes(run):
    """The case itself: the static interpreter and the extension's libpython are both mapped."""
    if not run.target.argv[0].startswith("/usr/bin/"):
        assert len([m for m in run.modules if "libpython" in m]) == 1, run.modules
        return
    assert run.modules == ["/usr/bin/python3.11",
                           "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"], run.modules


def test_frames_equal_faulthandler_live_and_from_a_core(run):
    for proc, what in ((run.live, "live"), (run.core, "core")):
        assert_same_stacks(run, proc, what)


def test_faulthandler_saw_the_marked_lines(run):
    here = str(PROGRAM)
    ours = {tid: [li for _, fi, li in frames if fi == here] for tid, frames in run.cpython.items()}
    assert ours[run.target.pid] == [line_of("main_wait"), line_of("main_calls_c"),
                                    line_of("main_calls_c"), line_of("module_main")]
    worker = [lines for tid, lines in ours.items() if tid != run.target.pid]
    assert worker == [[line_of("worker_wait"), line_of("worker_calls_c"), line_of("worker_calls_c")]]


def test_native_puts_the_extension_between_its_python_frames(run):
    """--native: the Python frames in faulthandler's order, and the extension's C function right
    between the lambda it called and the Python frame that called it."""
    for tid, expected in run.cpython.items():
        t = lib.thread_by_tid(run.native, tid)
        frames = t["frames"]
        assert [f[1:] for f in python_frames(t)] == [f[1:] for f in expected], lib.format_stack(t)
        at = lib.find_frame(frames, "hs_callback_call")
        assert at > 0, lib.format_stack(t)
        above = [f for f in frames[:at] if f["kind"] == "python"]
        below = [f for f in frames[at + 1:] if f["kind"] == "python"]
        assert above[-1]["function"].endswith("<lambda>"), lib.format_stack(t)
        assert below[0]["line"] in (line_of("main_calls_c"), line_of("worker_calls_c")), \
            lib.format_stack(t)


def test_watch_reads_the_live_runtime_too(run, ebpf):  # noqa: F811
    """`hangscan watch` takes its layout and interpreter list from the same choice: the waits
    still going at the end of the window carry faulthandler's Python frames."""
    if not run.target.argv[0].startswith("/usr/bin/"):
        pytest.skip("one runtime: the dump tests cover it")
    watch = lib.run_hangscan(["watch", "--pid", run.target.pid, "--for", "1", "--json"],
                             timeout=120)
    assert watch.rc == 0, watch.describe()
    waits = {w["tid"]: w for p in watch.doc["processes"] for w in p["waits"] if w["ongoing"]}
    for tid, expected in run.cpython.items():
        assert tid in waits, sorted(waits)
        got = [(f["file"], f["line"]) for f in waits[tid]["frames"] if f["kind"] == "python"]
        assert got == [f[1:] for f in expected], (tid, got, expected)


SECOND_RUNTIME = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
/* start(libpython, code): loads that libpython with its own symbols first and runs `code` in
   its runtime, initialized on a new thread (no site import). */
static void* lib;
static char code[4096];
static void* run(void* arg) {
  (void)arg;
  int* nosite = (int*)dlsym(lib, "Py_NoSiteFlag");
  if (nosite) *nosite = 1;
  ((void (*)(int))dlsym(lib, "Py_InitializeEx"))(0);
  ((int (*)(const char*))dlsym(lib, "PyRun_SimpleString"))(code);
  return NULL;
}
static PyObject* start(PyObject* self, PyObject* args) {
  const char* path;
  const char* text;
  pthread_t t;
  (void)self;
  if (!PyArg_ParseTuple(args, "ss", &path, &text)) return NULL;
  snprintf(code, sizeof code, "%s", text);
  lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!lib) return PyErr_Format(PyExc_OSError, "%s", dlerror());
  if (pthread_create(&t, NULL, run, NULL) != 0) return PyErr_Format(PyExc_OSError, "thread");
  pthread_detach(t);
  Py_RETURN_NONE;
}
static PyMethodDef methods[] = {{"start", start, METH_VARARGS, "a second runtime"},
                                {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "hs_second", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};
PyMODINIT_FUNC PyInit_hs_second(void) { return PyModule_Create(&module); }
"""


def test_two_live_runtimes_are_both_read(tmp_path):
    """Debian's python3.11 runs its own runtime and, on a second thread, pyenv's 3.11 libpython
    (loaded RTLD_LOCAL|RTLD_DEEPBIND, initialized there): both threads' Python frames are read,
    live and from a core."""
    python = "/usr/bin/python3.11"
    second = [p for p in INTERPRETERS if p[0].startswith("pyenv-3.11.")]
    if not os.path.exists(python) or not second or second[0][1] is None:
        pytest.skip("needs Debian's python3.11 and a pyenv 3.11 build")
    libpython = os.path.join(os.path.dirname(os.path.dirname(second[0][1])), "lib",
                             "libpython3.11.so.1.0")
    os.chmod(tmp_path, 0o755)
    src = tmp_path / "hs_second.c"
    src.write_text(SECOND_RUNTIME)
    subprocess.run(["gcc", "-O2", "-g", "-shared", "-fPIC", "-I", "/usr/include/python3.11", "-o",
                    str(tmp_path / "hs_second.so"), str(src), "-ldl", "-lpthread"],
                   check=True, timeout=120)
    program = lib.program_source("py_two_live_runtimes.py")
    line = lambda tag: lib.hs_line("py_two_live_runtimes.py", tag)  # noqa: E731
    here = str(program)
    with lib.TargetPool() as pool:
        target = pool.start([python, here, lib.READY, str(tmp_path), libpython], timeout=60)
        live = lib.dump(target.pid)
        assert live.rc == 0, live.describe()
        cores = tmp_path / "cores"
        cores.mkdir()
        gcore = lib.run_hangscan(["gcore", "--pid", target.pid, "-o", cores, "--json"], timeout=300)
        assert gcore.rc == 0, gcore.describe()
        core = lib.run_hangscan(["core", gcore.doc["path"], "--json"], timeout=300)
        assert core.rc == 0, core.describe()
        for doc in (live.doc, core.doc):
            proc = lib.process_of(doc, target.pid)
            assert proc["python"]["version"] == "3.11.2", proc["python"]  # the executable's
            stacks = sorted(python_frames(t) for t in proc["threads"] if python_frames(t))
            assert stacks == [
                [("main_wait", here, line("main_wait")), ("main", here, line("main_calls_wait")),
                 ("<module>", here, line("module_main"))],
                [("second", here, line("second_wait")), ("<module>", here, line("second_module")),
                 ("<module>", "<string>", 2)]], stacks


@pytest.fixture(scope="module", autouse=True)
def versions_report(request):
    yield
    lib.print_past_capture(request, [
        "two runtimes, python versions tested: " + ("; ".join(RAN) or "none"),
        "two runtimes, skipped (absent): " + ("; ".join(ABSENT) or "none")])
