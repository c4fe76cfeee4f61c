"""Outcomes that tell the truth: a target that dies while it is captured or while its core is
written, and a process whose main thread is in uninterruptible sleep (D state).

Deaths are made deterministic, never timed: for a core, the test watches the writer's hidden
.partial file grow, stops the writer (SIGSTOP) once it has written a good part, checks the core
has no name yet, kills the target and lets the writer go on; for a dump, hangscan stops itself
while the target is frozen (HANGSCAN_TEST_STOP_WHILE_FROZEN=1, a test-only hook) and the test
kills the target then. D state: tests/programs/vfork_block.c, a vfork() parent whose child
blocks, next to an ordinary sleeping thread. Unreadable memory of a living process:
tests/programs/unreadable_map.c (pages of a kept mapping beyond the end of a truncated file).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile

import pytest

import hs_testlib as hs


@pytest.fixture(autouse=True)
def ptrace_path(monkeypatch):
    """These tests are about the ptrace stop: dump's quiet path (BPF, test_quiet_dump.py) is
    off for them."""
    monkeypatch.setenv("HANGSCAN_NO_BPF", "1")


PYTHON = "/usr/bin/python3"
BIG = hs.program_source("py_big.py")
KILLED_HINT = "hint: the process is gone; the kernel log (dmesg) says whether the OOM killer ended it\n"
D_NOTE = ("uninterruptible sleep (D state): it cannot be stopped until its kernel call returns, so "
          "its user stack is not shown; its kernel stack is where it waits")


@pytest.fixture
def outdir():
    d = tempfile.mkdtemp(prefix="hs-outcomes-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def start_hangscan(args, env=None):
    return subprocess.Popen([hs.hangscan_bin()] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)


def finish(proc, timeout=120):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError("hangscan did not finish; stderr: " + err[-3000:])
    return proc.returncode, out, err


def dead(pid):
    return hs.process_state(pid) in (None, "Z", "X")


def kill_while_stopped(hangscan, target):
    """hangscan is stopped (T): kill the target, wait until it is dead, let hangscan go on."""
    os.kill(target.pid, signal.SIGKILL)
    hs.wait_for(lambda: dead(target.pid), 30, "the target to die")
    os.kill(hangscan.pid, signal.SIGCONT)


OVER = object()  # kill_during_core_write: the writer ended before the test could stop it


def kill_during_core_write(hangscan, target, d, min_bytes=64 << 20):
    """Waits until the writer's hidden .partial core holds min_bytes, stops the writer, checks
    that nothing has a core's name yet, kills the target and lets the writer go on. Returns
    False, with the writer finished and `d` emptied, when the write was already over when the
    writer stopped (the target released, the core published or about to be): on a loaded
    machine this test can see the file only near its end. Then nothing was killed."""
    def grown():
        if hangscan.poll() is not None:
            return OVER  # ended before the test saw min_bytes: the race was lost (or it failed)
        for name in os.listdir(d):
            if ".partial-" in name:
                try:
                    if os.stat(os.path.join(d, name)).st_size >= min_bytes:
                        return name
                except FileNotFoundError:
                    pass
        return None
    try:
        partial = hs.wait_for(grown, 240, "the core writer to write %d bytes" % min_bytes, interval=0.001)
        if partial is not OVER:
            os.kill(hangscan.pid, signal.SIGSTOP)
            hs.wait_for(lambda: hs.process_state(hangscan.pid) == "T", 30, "hangscan to stop")
        names = os.listdir(d)
        if partial is OVER or partial not in names or not hs.stopped_threads(target.pid):
            if partial is not OVER:
                os.kill(hangscan.pid, signal.SIGCONT)  # the race was lost: the write was over
            rc, out, err = finish(hangscan)
            assert rc == 0, (rc, err)
            for n in os.listdir(d):
                os.unlink(os.path.join(d, n))
            return False
        assert not [n for n in names if n.startswith("core.")], names
        kill_while_stopped(hangscan, target)
        return True
    except BaseException:
        if hangscan.poll() is None:
            os.killpg(hangscan.pid, signal.SIGKILL)
        raise


def killed_mid_write(targets, outdir, argv_for):
    """A 512-MiB target whose core `argv_for(pid)` was writing when it was killed, and that
    hangscan; a few tries, since a try can lose the race (kill_during_core_write)."""
    for _ in range(3):
        big = targets.start([PYTHON, str(BIG), hs.READY, "512"], timeout=120)
        proc = start_hangscan(argv_for(big.pid))
        if kill_during_core_write(proc, big, outdir):
            return big, proc
    raise AssertionError("the core write was over before the test could stop it, 3 times")


def test_gcore_of_a_process_killed_mid_write_is_no_core_and_exit_2(targets, outdir):
    big, proc = killed_mid_write(targets, outdir,
                                 lambda pid: ["gcore", "--pid", pid, "-o", outdir, "--max-size", "4G"])
    rc, out, err = finish(proc)
    assert rc == 2, (rc, out, err)
    assert err == ("hangscan: pid %d was killed by SIGKILL while its core was being written: no core "
                   "was written\n" % big.pid + KILLED_HINT), err
    assert out == ""
    assert os.listdir(outdir) == []     # neither a core nor the partial file is left


def test_dump_gcore_of_a_process_killed_mid_write_says_so_and_exit_1(targets, outdir):
    big, proc = killed_mid_write(targets, outdir,
                                 lambda pid: ["dump", "--pid", pid, "--gcore", "all", "--gcore-dir",
                                              outdir, "--gcore-max-size", "4G", "--json"])
    rc, out, err = finish(proc)
    assert rc == 1, (rc, err)
    assert re.search(r"^hangscan: no core of pid %d on \S+ \([a-z -]+\): pid %d was killed by SIGKILL "
                     r"while its core was being written: no core was written$" % (big.pid, big.pid),
                     err, re.M), err
    assert os.listdir(outdir) == []


def test_dump_of_a_process_killed_while_frozen_reports_it_dead_exit_2(targets):
    t = targets.start([hs.program("deadlock"), hs.READY])
    env = dict(os.environ, HANGSCAN_TEST_STOP_WHILE_FROZEN="1")
    proc = start_hangscan(["dump", "--pid", t.pid, "--json"], env=env)
    try:
        hs.wait_for(lambda: hs.process_state(proc.pid) == "T", 60, "hangscan to stop while frozen")
        assert sorted(hs.stopped_threads(t.pid)) == t.tids()
        kill_while_stopped(proc, t)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    rc, out, err = finish(proc)
    assert rc == 2, (rc, err)
    doc = json.loads(out)
    p = hs.process_of(doc, t.pid)
    assert p["state"] == "X"
    errors = [(d["severity"], d["message"], d["hint"]) for d in p["diagnostics"]]
    assert ("error", "pid %d was killed by SIGKILL while it was being captured: its stacks may be "
            "incomplete" % t.pid, KILLED_HINT[len("hint: "):-1]) in errors, errors


@pytest.fixture
def vfork_parent(targets):
    t = targets.start([hs.program("vfork_block"), hs.READY], main_parked=False)
    hs.wait_for(lambda: hs.thread_states(t.pid).get(t.pid) == "D", 30, "the vfork parent to be in D state")
    return t


def test_d_state_main_thread_other_threads_full_stacks_exit_1(vfork_parent):
    t = vfork_parent
    sleeper = [tid for tid in t.tids() if tid != t.pid]
    assert len(sleeper) == 1
    run = hs.dump(t.pid, timeout=60)
    assert run.rc == 1, run.describe()
    p = hs.process_of(run.doc, t.pid)
    assert p["pause_us"] < 100_000, p["pause_us"]      # the D thread is not waited for
    main = hs.thread_by_tid(p, t.pid)
    assert main["state"] == "D" and main["frames"] == [] and main["notes"] == [D_NOTE], hs.format_stack(main)
    kernel = [f["function"] for f in main["kernel_frames"]]
    assert any("vfork" in fn for fn in kernel), kernel
    st = hs.thread_by_tid(p, sleeper[0])
    frames = [(f["function"], f["line"]) for f in hs.frames_of(st) if f["function"].startswith("sleeper_")]
    assert frames == [("sleeper_wait", hs.hs_line("vfork_block.c", "sleeper_read")),
                      ("sleeper_main", hs.hs_line("vfork_block.c", "sleeper_calls"))], hs.format_stack(st)
    assert st["notes"] == []
    diags = [(d["severity"], d["message"]) for d in p["diagnostics"]]
    assert diags == [("warning", "thread %d in uninterruptible sleep (D state) could not be stopped: its "
                      "user stack is not shown; the other threads were captured" % t.pid)], diags
    hs.assert_runs_on(t.pid)
    assert hs.thread_states(t.pid)[t.pid] == "D"

    text = hs.dump(t.pid, as_json=False, timeout=60)
    assert text.rc == 1
    assert "    (no frames)\n  kernel:\n" in text.stdout, text.stdout
    assert "  note: uninterruptible sleep (D state): it cannot be stopped" in text.stdout
    assert "sleeper_wait (" in text.stdout


def test_d_state_gcore_keeps_the_other_threads_exit_1(vfork_parent, outdir):
    t = vfork_parent
    run = hs.run_hangscan(["gcore", "--pid", t.pid, "-o", outdir, "--json"], timeout=120)
    assert run.rc == 1, run.describe()
    assert run.doc["threads"] == 1
    assert run.doc["warnings"] == ["thread %d left out of the core: %s" % (t.pid, D_NOTE)]
    assert run.doc["pause_us"] < 1_000_000
    core = hs.run_hangscan(["core", run.doc["path"], "--json"], timeout=120)
    p = core.doc["processes"][0]
    st = [th for th in p["threads"] if th["tid"] != t.pid]
    assert [th["tid"] for th in p["threads"]] == [tid for tid in t.tids() if tid != t.pid]
    assert hs.find_frame(hs.frames_of(st[0]), "sleeper_wait") >= 0, hs.format_stack(st[0])
    hs.assert_runs_on(t.pid)


def guard_page_of(target) -> tuple[int, int] | None:
    """The guard page unreadable_map made (None: this kernel has no guard regions)."""
    m = re.search(r"guard (none|([0-9a-f]+)-([0-9a-f]+))", target.stderr())
    return None if m.group(1) == "none" else (int(m.group(2), 16), int(m.group(3), 16))


def test_gcore_lists_a_guard_page_as_omitted_without_a_warning(targets, outdir):
    """A guard page inside a kept mapping (madvise MADV_GUARD_INSTALL, as glibc 2.42+ guards
    thread stacks) is read by nobody: listed apart, no warning, exit 0, the pages around it kept."""
    t = targets.start([hs.program("unreadable_map"), hs.READY, outdir, "guard-only"])
    guard = guard_page_of(t)
    if guard is None:
        pytest.skip("this kernel has no guard regions (MADV_GUARD_INSTALL: Linux 6.13+)")
    run = hs.run_hangscan(["gcore", "--pid", t.pid, "-o", outdir, "--json"], timeout=120)
    assert run.rc == 0, run.describe()
    assert run.stderr == "" and run.doc["warnings"] == [] and run.doc["unreadable_bytes"] == 0
    assert "omitted %x-%x 4096 guard pages (MADV_GUARD_INSTALL)" % guard in run.doc["omitted"], \
        run.doc["omitted"]
    assert [line for line in run.doc["omitted"] if line.endswith(" unreadable")] == []
    # The written pages on both sides of it are in the core, as gdb reads them; the guard page
    # itself is a hole (zeros), as in the kernel's own cores.
    gdb = subprocess.run(["gdb", "-nx", "-batch", "-ex", "x/1xb 0x%x" % (guard[0] - 1),
                          "-ex", "x/1xb 0x%x" % guard[0], "-ex", "x/1xb 0x%x" % guard[1],
                          hs.program("unreadable_map"), run.doc["path"]],
                         capture_output=True, text=True, timeout=120)
    got = re.findall(r"^0x([0-9a-f]+):\s+(0x[0-9a-f]{2})$", gdb.stdout, re.M)
    assert got == [("%x" % (guard[0] - 1), "0x6b"), ("%x" % guard[0], "0x00"), ("%x" % guard[1], "0x6b")], \
        gdb.stdout + gdb.stderr
    hs.assert_runs_on(t.pid)


def test_gcore_counts_unreadable_memory_apart_and_warns_exit_1(targets, outdir):
    """Pages of a kept mapping that cannot be read (beyond the end of a truncated file) are
    holes in the core: counted as unreadable, not kept, listed, and warned about."""
    t = targets.start([hs.program("unreadable_map"), hs.READY, outdir])
    start, end = (int(x, 16) for x in re.search(r"mapping ([0-9a-f]+)-([0-9a-f]+)", t.stderr()).groups())
    run = hs.run_hangscan(["gcore", "--pid", t.pid, "-o", outdir, "--json"], timeout=120)
    assert run.rc == 1, run.describe()
    warning = ("12K of memory to keep could not be read: the core has holes there (listed as "
               "unreadable in its HANGSCAN note)")
    assert run.stderr == "hangscan: " + warning + "\n"
    assert run.doc["warnings"] == [warning]
    assert run.doc["unreadable_bytes"] == 3 * 4096
    assert [line for line in run.doc["omitted"] if line.endswith(" unreadable")] == \
        ["omitted %x-%x 12288 unreadable" % (start + 4096, end)]
    hs.assert_runs_on(t.pid)
    # Reading the core says the holes are there (they read as zeros).
    core = hs.run_hangscan(["core", run.doc["path"], "--json"], timeout=120)
    assert core.rc == 1, core.describe()
    diags = [(d["severity"], d["message"]) for d in core.doc["processes"][0]["diagnostics"]]
    assert ("warning", "%s: 12288 bytes of its memory could not be read when it was written and read "
            "as zeros (listed as unreadable under omitted)" % run.doc["path"]) in diags, diags
