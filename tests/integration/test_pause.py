"""The pause of a --native dump of a 50-thread Python process, and what happens inside it.

tests/programs/py_threads.py runs 50 threads, each worker -> level x3 -> park, parked in
time.sleep (even threads) or Event.wait (odd threads) at lines marked "# MARK name". The test
waits until every thread sleeps in the kernel, dumps with --native --verbose, and asserts:
  - every worker's Python frames, exactly (function, file, line), and the C function under park;
  - the --verbose split of the pause: its parts add up to no more than the pause, and the
    Python walk read the target in one batch (the pages found by a walk before the stop),
    not once per frame;
  - the target runs on afterwards, no thread left stopped.
Timing goals are not asserted here (benchmarks measure them: tests/bench/bench_dump.py).
"""

import re

import pytest

import hs_testlib as lib


@pytest.fixture(autouse=True)
def ptrace_path(monkeypatch):
    """These tests are about the ptrace stop: dump's quiet path (BPF, test_quiet_dump.py) is
    off for them."""
    monkeypatch.setenv("HANGSCAN_NO_BPF", "1")


PY_THREADS = lib.program_source("py_threads.py")
PYTHON = "/usr/bin/python3.11"
N = 50


def marks():
    tag = re.compile("# " + "MARK " + r"([a-z_]+)\s*$")
    return {m.group(1): n for n, line in enumerate(PY_THREADS.read_text().splitlines(), 1)
            if (m := tag.search(line))}


MARKS = marks()
PAUSE_LINE = re.compile(
    r"pid (\d+): paused (\d+) us: (\d+) threads stopped and registers read in (\d+) us, "
    r"(\d+) KiB of stacks copied in (\d+) us, Python frames walked in (\d+) us \((\d+) reads\), "
    r"resumed in (\d+) us")


def start(pool):
    target = pool.start([PYTHON, str(PY_THREADS), lib.READY, str(N)], timeout=60)
    lib.wait_for(lambda: len(lib.thread_states(target.pid)) == N + 1 and
                 set(lib.thread_states(target.pid).values()) == {"S"},
                 30, "every thread asleep in the kernel")
    return target


def test_fifty_threads_native_frames_and_pause_split():
    with lib.TargetPool() as pool:
        target = start(pool)
        run = lib.dump(target.pid, "--native", "--verbose")
        assert run.rc == 0, run.describe()
        proc = lib.process_of(run.doc, target.pid)
        assert len(proc["threads"]) == N + 1

        here = str(PY_THREADS)
        parks = {"park_sleep": 0, "park_event": 0}
        for t in proc["threads"]:
            py = [f for f in t["frames"] if f["kind"] == "python" and f["file"] == here]
            if t["tid"] == target.pid:
                assert [(f["function"], f["line"]) for f in py][0] == ("main", MARKS["main_wait"])
                continue
            got = [(f["function"], f["line"]) for f in py]
            mark = "park_sleep" if got[0][1] == MARKS["park_sleep"] else "park_event"
            parks[mark] += 1
            assert got == [("park", MARKS[mark]), ("level", MARKS["level_park"]),
                           ("level", MARKS["level_recurse"]), ("level", MARKS["level_recurse"]),
                           ("worker", MARKS["worker_level"])], (t["tid"], got)
            # The C function the thread blocks in sits under park.
            frames = t["frames"]
            first_py = next(i for i, f in enumerate(frames) if f["kind"] == "python")
            under = [f["function"] for f in frames[:first_py]]
            want = r"nanosleep" if mark == "park_sleep" else r"sem_|futex"
            assert any(re.search(want, fn) for fn in under), (mark, under)
        assert parks == {"park_sleep": N // 2, "park_event": N // 2}

        lines = [m for m in map(PAUSE_LINE.search, run.stderr.splitlines()) if m]
        assert len(lines) == 1, run.stderr
        pid, pause, threads, stop, kib, stacks, walk, reads, resume = map(int, lines[0].groups())
        assert pid == target.pid and threads == N + 1
        assert pause == proc["pause_us"]
        assert stop + stacks + walk + resume <= pause + 1
        assert kib > 0
        # Every thread is asleep: the pages the walk needs were all known before the stop and
        # come in one batch (a walk read field by field makes ~80 reads here).
        assert reads <= 2, lines[0].group(0)
        lib.assert_runs_on(target.pid)
