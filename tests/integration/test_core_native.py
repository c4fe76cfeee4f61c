"""`hangscan core` on real kernel cores of native programs: signals explained, the crashed
thread marked, exact frames and lines, the environment's rank, gcore of a live process.

Cores are made here: kernel.core_pattern points into a private directory for the module
(restored afterwards; ctest runs every test_core*.py under RESOURCE_LOCK core_pattern).
"""

import os
import signal

import pytest

import core_testlib as ct
import hs_testlib as hs

NATIVE = "crash_native.c"


@pytest.fixture(scope="module")
def cores():
    with ct.CoreDir() as d:
        yield d


@pytest.fixture(scope="module")
def null_core(cores):
    return cores.crash([hs.program("crash_native"), "1", "null"], signal.SIGSEGV,
                       env={"RANK": "3", "WORLD_SIZE": "4"})


def test_null_pointer(null_core):
    core, pid = null_core
    run = ct.hangscan_core([core])
    assert run.rc == 0, run.describe()
    p = ct.only_process(run.doc)
    assert p["pid"] == pid
    assert p["core"] == str(core)
    assert p["signal"] == {"number": 11, "name": "SIGSEGV", "address": "0x0", "code": 1}
    assert p["crashed_tid"] == pid
    assert p["rank"] == 3 and p["world_size"] == 4
    assert p["cmdline"] == [hs.program("crash_native"), "1", "null"]
    assert p["exe"] == hs.program("crash_native")
    t = ct.crashed_thread(p)
    top = t["frames"][0]
    assert (top["function"], top["line"]) == ("read_null", hs.hs_line(NATIVE, "null"))
    assert top["file"].endswith(NATIVE)
    # main() tail-calls read_null(): no frame of its own.
    assert ct.native_functions(t) == ["read_null", "__libc_start_call_main", "__libc_start_main",
                                      "_start"]
    line = hs.hs_line(NATIVE, "null")
    assert p["annotations"] == [
        f"SIGSEGV at address 0x0: a null pointer dereference in read_null (crash_native.c:{line})"]


def test_text_report_says_it(null_core):
    core, _ = null_core
    run = ct.hangscan_core([core], as_json=False)
    assert run.rc == 0, run.describe()
    assert "SIGSEGV at address 0x0: a null pointer dereference" in run.stdout
    assert "CRASHED" in run.stdout


@pytest.mark.parametrize("mode,sig,sentence", [
    ("fpe", signal.SIGFPE, "SIGFPE: integer division by zero in divide (crash_native.c:{line})"),
    ("abort", signal.SIGABRT, "abort() was called by give_up (crash_native.c:{line}) and raised SIGABRT"),
    ("ill", signal.SIGILL, "SIGILL at address {addr}: illegal instruction in illegal (crash_native.c:{line})"),
])
def test_signal_meanings(cores, mode, sig, sentence):
    core, pid = cores.crash([hs.program("crash_native"), "1", mode], sig)
    run = ct.hangscan_core([core])
    assert run.rc == 0, run.describe()
    p = ct.only_process(run.doc)
    assert p["signal"]["number"] == sig
    t = ct.crashed_thread(p)
    want = sentence.format(line=hs.hs_line(NATIVE, mode), addr=p["signal"]["address"])
    assert p["annotations"][0].startswith(want), p["annotations"]
    fn = {"fpe": "divide", "abort": "give_up", "ill": "illegal"}[mode]
    hit = [f for f in t["frames"] if f["function"] == fn]
    assert hit and hit[0]["line"] == hs.hs_line(NATIVE, mode)


def test_stack_overflow(cores):
    core, _ = cores.crash([hs.program("crash_native"), "1", "overflow"], signal.SIGSEGV)
    run = ct.hangscan_core([core])
    assert run.rc == 0, run.describe()
    p = ct.only_process(run.doc)
    assert p["annotations"][0].startswith(
        f"SIGSEGV at address {p['signal']['address']}: stack overflow: the thread ran out of stack")
    t = ct.crashed_thread(p)
    assert t["frames"][0]["function"] == "recurse"
    assert sum(f["function"] == "recurse" for f in t["frames"]) >= 100


def test_uncaught_exception_in_worker_thread(cores):
    core, pid = cores.crash([hs.program("crash_throw"), "1"], signal.SIGABRT)
    run = ct.hangscan_core([core])
    assert run.rc == 0, run.describe()
    p = ct.only_process(run.doc)
    assert p["signal"]["name"] == "SIGABRT"
    t = ct.crashed_thread(p)
    assert t["tid"] != pid, "the worker thread threw, not the main thread"
    assert p["annotations"][0] == (
        'std::terminate was called after an uncaught C++ exception of type std::runtime_error '
        '(what(): "bad shard 7"); abort() raised SIGABRT')
    fns = ct.native_functions(t)
    assert fns.index("abort") < fns.index("__cxa_throw")
    thrower = [f for f in t["frames"] if f["function"].startswith("(anonymous namespace)::load_shard")]
    assert thrower and thrower[0]["line"] == hs.hs_line("crash_throw.cpp", "throw")
    main = ct.thread_by_tid(p, pid)
    assert not main["crashed"]
    assert [f["line"] for f in main["frames"] if f["function"] == "main"] == \
        [hs.hs_line("crash_throw.cpp", "join")]


def test_gcore_of_a_live_process(cores, targets, tmp_path):
    """A hung process dumped with gcore keeps running; its core shows both blocked threads,
    no crash, and the rank from the environment."""
    t = targets.start([hs.program("crash_native"), hs.READY, "wait"],
                      env=dict(os.environ, RANK="1", WORLD_SIZE="2"))
    core = ct.gcore(t.pid, tmp_path / "gcore")
    hs.assert_runs_on(t.pid)
    run = ct.hangscan_core([core])
    assert run.rc == 0, run.describe()
    p = ct.only_process(run.doc)
    assert p["signal"] is None and p["crashed_tid"] is None and p["annotations"] == []
    assert p["rank"] == 1 and p["world_size"] == 2
    assert sorted(x["tid"] for x in p["threads"]) == t.tids()
    line = hs.hs_line(NATIVE, "wait_read")
    for th in p["threads"]:
        assert not th["crashed"]
        assert th["syscall"] == "read"
        hits = [f for f in th["frames"] if f["function"] == "block_in_read"]
        assert hits and hits[0]["line"] == line, th["frames"]


def test_many_cores_grouped_odd_one_named(cores, tmp_path):
    """Four ranks' cores: three aborted in give_up, rank 2 dereferenced NULL. One shared run
    groups them like live ranks and names rank 2; a rank from the file name counts too."""
    paths = []
    for rank in (0, 1, 3):
        core, _ = cores.crash([hs.program("crash_native"), "1", "abort"], signal.SIGABRT,
                              env={"RANK": str(rank), "WORLD_SIZE": "4"})
        paths.append(core)
    odd, _ = cores.crash([hs.program("crash_native"), "1", "null"], signal.SIGSEGV,
                         env={"WORLD_SIZE": "4"})
    named = tmp_path / "core.rank2"
    os.link(odd, named)
    run = ct.hangscan_core(paths + [named])
    assert run.rc == 0, run.describe()
    ranks = sorted(p["rank"] for p in run.doc["processes"])
    assert ranks == [0, 1, 2, 3]
    groups = run.doc["groups"]
    assert [sorted(g["ranks"]) for g in groups] == [[2], [0, 1, 3]]
    assert groups[0]["suspect"] and not groups[1]["suspect"]


def test_wrong_executable_is_a_warning(null_core):
    core, _ = null_core
    run = ct.hangscan_core([core], "--exe", hs.program("crash_throw"))
    assert run.rc == 1, run.describe()
    diags = ct.only_process(run.doc)["diagnostics"]
    assert any("build-id mismatch" in d["message"] and hs.program("crash_native") in d["message"]
               for d in diags), diags


def test_missing_library_is_a_warning(null_core, tmp_path):
    """A core whose libraries are not on this machine under the given sysroot or lib paths
    still reports, and says which files are missing."""
    core, _ = null_core
    # The core's paths exist on this machine, so point --exe at something absent instead.
    run = ct.hangscan_core([core], "--exe", str(tmp_path / "no-such-exe"))
    assert run.rc == 1, run.describe()
    diags = ct.only_process(run.doc)["diagnostics"]
    assert any("not found" in d["message"] and "--exe" in d["hint"] for d in diags), diags
