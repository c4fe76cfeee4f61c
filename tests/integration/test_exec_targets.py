"""Targets that exec while captured, and hangscan's own pid (issue 36, "Never harm the target").

An exec by any thread kills the process's other threads and, holding the process's
cred_guard_mutex, waits until each is released; a thread hangscan traced is released only by
hangscan's wait, while hangscan's next PTRACE_SEIZE waits for that mutex. Every capture of such a
target must end in bounded time, the target must run on (still exec'ing, no thread left stopped),
and what hangscan says must be the truth: an exec, not a zombie or a permission problem.
"""

import os
import subprocess
import tempfile
import time

import pytest

import hs_testlib as hs

DEADLINE_S = 10
# Messages an exec during the capture once produced; none is true of a process that execs.
WRONG = ("is a zombie", "permission denied", "the process is exiting", "was killed by",
         "no thread could be stopped", "no such process")


def generation(pid):
    """exec_loop's generation (argv[3]); None while /proc shows no command line (mid-exec)."""
    args = (hs.read_text(f"/proc/{pid}/cmdline") or "").split("\0")
    return int(args[3]) if len(args) > 3 and args[3].isdigit() else None


def assert_still_execs(pid, more=3):
    start = hs.wait_for(lambda: (lambda g: g is not None and (g,))(generation(pid)), 5,
                        "a generation in the command line")[0]
    hs.wait_for(lambda: (generation(pid) or 0) >= start + more, 5,
                f"exec_loop to exec {more} more times (stuck at generation {start}?)")


def assert_released(pid, settle=2.0, clean_for=0.05):
    """hs.assert_runs_on for a process that execs: its leader is a zombie for an instant in
    every exec, which is no death; no thread may stay stopped (t/T) and nothing may trace it."""
    end = time.monotonic() + settle
    clean_since = None
    while True:
        assert hs.process_state(pid) is not None, f"target {pid} is gone"
        now = time.monotonic()
        if hs.stopped_threads(pid):
            clean_since = None
        elif clean_since is None:
            clean_since = now
        if clean_since is not None and now - clean_since >= clean_for and hs.tracer_pid(pid) == 0:
            return
        assert now < end, (f"target {pid}: stopped threads {hs.stopped_threads(pid)}, "
                           f"tracer {hs.tracer_pid(pid)}")
        time.sleep(0.005)


def capture_many(pid, argv_of, rounds):
    """Runs rounds captures (each under DEADLINE_S) and returns [(rc, stderr)]."""
    out = []
    for i in range(rounds):
        run = hs.run_hangscan(argv_of(i), timeout=DEADLINE_S)
        out.append((run.rc, run.stderr))
    return out


def check_outcomes(outcomes):
    for rc, err in outcomes:
        assert rc in (0, 1, 2), (rc, err)
        for wrong in WRONG:
            assert wrong not in err, f"exit {rc}, said {wrong!r} of an exec:\n{err}"
        if rc == 2:
            # exec_loop execs /proc/self/exe: the kernel names the new program "exe".
            assert "executed a new program during the capture (exec), now exe: what" in err, err
            assert "hint: it replaced its program while hangscan held it; run hangscan again" in err


@pytest.fixture
def core_dir():
    with tempfile.TemporaryDirectory(prefix="hs-exec-cores-") as d:
        yield d


@pytest.mark.parametrize("on_trace", [0, 1], ids=["every_5ms", "on_attach"])
def test_dumps_and_gcores_of_an_exec_loop_end_and_it_runs_on(targets, core_dir, on_trace):
    """40 threads; a non-leader thread execs every 5 ms, or (on_attach) as soon as a tracer
    attached two of its threads, which lands the exec in the middle of the attach."""
    period = 5000 if not on_trace else 30_000_000
    target = targets.start([hs.program("exec_loop"), hs.READY, "40", "0", str(period),
                            str(on_trace)], main_parked=False)
    rounds = 30 if not on_trace else 8
    dumps = capture_many(target.pid, lambda i: ["dump", "--pid", target.pid], rounds)
    def gcore_into(i):  # one directory per core: the name of a core is per pid
        os.mkdir(os.path.join(core_dir, str(i)))
        return ["gcore", "--pid", target.pid, "-o", os.path.join(core_dir, str(i))]

    gcores = capture_many(target.pid, gcore_into, rounds)
    check_outcomes(dumps)
    check_outcomes(gcores)
    if on_trace:
        # The exec lands during the attach: at least some captures must have seen it.
        assert sum(rc == 2 for rc, _ in dumps + gcores) >= 1, dumps + gcores
    assert_released(target.pid)
    assert_still_execs(target.pid, more=3 if not on_trace else 0)
    # No core of a process that changed its program mid-way is left (complete ones are).
    assert not [f for _, _, files in os.walk(core_dir) for f in files if ".partial-" in f]


OWN_PID = "pid {} is hangscan itself"
OWN_HINT = ("hint: hangscan cannot stop the threads it runs on; give the pid of the process to "
            "capture")


@pytest.mark.parametrize("command", ["dump", "gcore"])
def test_own_pid_is_named_as_hangscan_itself(hangscan, command, core_dir):
    extra = " -o " + core_dir if command == "gcore" else ""
    # exec: the shell's pid ($$) becomes hangscan's.
    proc = subprocess.run(["sh", "-c", f"exec {hangscan} {command} --pid $${extra}; "],
                          capture_output=True, text=True, timeout=30)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 64, proc.stderr
    assert len(lines) == 2, proc.stderr
    pid = int(lines[0].split()[2])
    assert lines[0] == "hangscan: " + OWN_PID.format(pid), proc.stderr
    assert lines[1].startswith(OWN_HINT), proc.stderr
    assert os.listdir(core_dir) == []
