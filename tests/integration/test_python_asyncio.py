"""asyncio tasks of a hung service, read from memory: names, coroutine chains, who waits on whom.

tests/programs/py_asyncio.py runs five tasks (a producer waiting on an Event through a helper
coroutine, a consumer awaiting the producer task, a lock holder asleep, a lock waiter, the main
coroutine) and writes the interpreter's own view of every task (asyncio.all_tasks(), cr_await,
cr_frame.f_lineno, Task._fut_waiter). For every interpreter 3.8-3.13 here (Debian's
python3.11 and pyenv's) hangscan's `asyncio_tasks` must equal that view exactly, live and from
a core written by `hangscan gcore`; the text names "Task "consumer" awaits task "producer"".

Debian's python3.14 too, when HS_PY314_ROOT names its root (see test_python_state.py): the
program runs under chroot there and hangscan reads it from outside by its host pid, and its
core with --sysroot. 3.14 keeps no task registry in asyncio.tasks: hangscan follows the task
lists described by the _asyncio module's own `.AsyncioDebug` section. There,
tests/programs/py_asyncio_threads.py also runs loops in two threads and leaves a pending task
of a thread that ended (moved to the interpreter's list): every task of every list, each equal
to the interpreter's own view.
"""

import json
import os
import re
import shutil

import pytest

import core_testlib as ct
import hs_testlib as lib
import test_python as tp
import test_python_state as tps

PROGRAM = lib.program_source("py_asyncio.py")
INTERPRETERS = [i for i in tp.INTERPRETERS
                if i[0].startswith("debian") or i[0].split("-")[1].split(".")[1] in
                ("8", "9", "10", "11", "12", "13")] + [tps.sid_interpreter()]
INNER_DIR = "/hs-py-asyncio"   # where the program is copied inside a chroot


def expected(view_path):
    with open(view_path) as fh:
        view = json.load(fh)
    return [{"name": v["name"], "awaits_task": v["awaits_task"], "awaits": v["awaits"],
             "coroutines": [list(c) for c in reversed(v["coroutines"])]} for v in view]


def got(proc):
    return [{"name": t["name"], "awaits_task": t["awaits_task"], "awaits": t["awaits"],
             "coroutines": [[f["function"], f["file"], f["line"]] for f in t["coroutines"]]}
            for t in proc["asyncio_tasks"]]


@pytest.fixture(scope="module", params=INTERPRETERS, ids=[i[0] for i in INTERPRETERS])
def service(request, tmp_path_factory):
    python = tp.present_or_skip(request.param, [])
    tmp = tmp_path_factory.mktemp(request.param[0])
    root = tps.SID_ROOT if request.param[0].startswith("sid") else None
    view = inner_view = os.path.join(str(tmp), "view.json")
    command = [python, str(PROGRAM), lib.READY, view]
    if root:
        os.makedirs(root + INNER_DIR, exist_ok=True)
        shutil.copy(str(PROGRAM), root + INNER_DIR)
        inner_view = "/tmp/hs-asyncio-view-%d.json" % os.getpid()
        view = root + inner_view
        command = ["chroot", root, python, INNER_DIR + "/" + PROGRAM.name, lib.READY, inner_view]
    with lib.TargetPool() as pool:
        target = pool.start(command, timeout=90)
        want = expected(view)
        if root:
            os.unlink(view)
        yield target, want, tmp, root


def test_tasks_equal_the_interpreters_own_view(service):
    target, want, _, _ = service
    assert [t["name"] for t in want] == ["Task-1", "consumer", "lock-holder", "lock-waiter",
                                         "producer"]
    run = lib.dump(target.pid, timeout=180)
    assert run.rc == 0, run.describe()
    assert got(lib.process_of(run.doc, target.pid)) == want


def test_text_says_which_task_waits_on_which(service):
    target, _, _, _ = service
    run = lib.dump(target.pid, as_json=False, timeout=180)
    assert run.rc == 0, run.describe()
    assert "asyncio tasks (5):" in run.stdout, run.stdout
    assert 'Task "consumer" awaits task "producer"' in run.stdout, run.stdout
    assert 'Task "lock-waiter" awaits a _asyncio.Future' in run.stdout, run.stdout


def test_tasks_from_a_core(service):
    target, want, tmp, root = service
    run = lib.run_hangscan(["gcore", "--pid", str(target.pid), "-o", str(tmp), "--json"],
                           timeout=300)
    assert run.rc == 0, run.describe()
    extra = ["--sysroot", root] if root else []
    core = ct.hangscan_core([run.doc["path"]], *extra, timeout=180)
    assert core.rc == 0, core.describe()
    assert got(ct.only_process(core.doc)) == want
    os.unlink(run.doc["path"])


def test_314_tasks_of_every_thread_and_of_ended_threads(tmp_path):
    ident, python, reason = tps.sid_interpreter()
    if python is None:
        pytest.skip("absent: " + reason)
    root = tps.SID_ROOT
    os.makedirs(root + INNER_DIR, exist_ok=True)
    for name in ("py_asyncio.py", "py_asyncio_threads.py"):
        shutil.copy(str(lib.program_source(name)), root + INNER_DIR)
    inner_view = "/tmp/hs-asyncio-threads-%d.json" % os.getpid()
    with lib.TargetPool() as pool:
        target = pool.start(["chroot", root, python, INNER_DIR + "/py_asyncio_threads.py",
                             lib.READY, inner_view], timeout=90)
        want = expected(root + inner_view)
        os.unlink(root + inner_view)
        # The loops' main tasks are numbered in the order the threads created them.
        names = sorted(re.sub(r"^Task-\d+$", "Task-N", t["name"]) for t in want)
        assert names == ["Task-N", "Task-N", "in-a", "in-b", "orphan"]
        assert sorted(t["awaits_task"] for t in want if t["awaits_task"]) == ["in-a", "in-b"]
        run = lib.dump(target.pid, timeout=180)
        assert run.rc == 0, run.describe()
        assert got(lib.process_of(run.doc, target.pid)) == want
        gcore = lib.run_hangscan(["gcore", "--pid", str(target.pid), "-o", str(tmp_path),
                                  "--json"], timeout=300)
        # Partial (1) is accepted here: on this process one 4K page is unreadable to gcore
        # (reported in the core's HANGSCAN note); the tasks are elsewhere.
        assert gcore.rc in (0, 1) and os.path.exists(gcore.doc["path"]), gcore.describe()
        core = ct.hangscan_core([gcore.doc["path"]], "--sysroot", root, timeout=180)
        assert core.rc == gcore.rc, core.describe()   # partial core: partial answer
        assert got(ct.only_process(core.doc)) == want
        os.unlink(gcore.doc["path"])
