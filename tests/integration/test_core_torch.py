"""`hangscan core` over the gcores of a real 4-rank torch.distributed (gloo) hang.

tests/programs/hang_gloo.py: rank 2 skips an all_reduce and sleeps, ranks 0, 1, 3 wait in
dist.all_reduce. Each rank is dumped with gdb's gcore while the job keeps running; one
`hangscan core` over the four cores must name rank 2 exactly as live mode does: ranks from
each core's memory (torch.multiprocessing.spawn ranks set RANK with os.environ, so only libc's
environ has it), the same groups, the same suspect, the same innermost Python frames.
"""

import importlib.util
import os

import pytest

import core_testlib as ct
import hs_testlib as hs

PYTHON = "/usr/bin/python3"
GLOO = str(hs.program_source("hang_gloo.py"))
WORLD = 4
ODD = 2


def innermost_python(proc):
    main = ct.thread_by_tid(proc, proc["pid"])
    frames = [f for f in main["frames"] if f["kind"] == "python"]
    assert frames, main["frames"]
    return frames[0]["function"], frames[0]["file"], frames[0]["line"]


def test_gloo_hang_from_gcores(targets, tmp_path):
    if not os.access(PYTHON, os.X_OK) or importlib.util.find_spec("torch") is None:
        pytest.skip("python3-torch is not installed (tools/deps.sh test installs it)")
    job = targets.start([PYTHON, GLOO, hs.READY, "--launcher", "spawn", "--world", WORLD,
                         "--odd", ODD], ready="pipe", timeout=400)
    live_run = hs.dump(job.pid, "--subprocesses")
    assert live_run.rc in (0, 1), live_run.describe()
    live = live_run.doc
    live_ranks = {p["rank"]: p for p in live["processes"] if p["role"] == "rank"}
    assert sorted(live_ranks) == list(range(WORLD))

    cores = [ct.gcore(live_ranks[r]["pid"], tmp_path / f"rank{r}") for r in range(WORLD)]
    for r in range(WORLD):
        hs.assert_runs_on(live_ranks[r]["pid"])

    run = ct.hangscan_core(cores, timeout=300)
    assert run.rc == 0, run.describe()
    doc = run.doc
    ranks = {p["rank"]: p for p in doc["processes"]}
    assert sorted(ranks) == list(range(WORLD))
    for r, p in ranks.items():
        assert p["pid"] == live_ranks[r]["pid"]
        assert p["world_size"] == WORLD
        assert p["signal"] is None and p["crashed_tid"] is None
        assert innermost_python(p) == innermost_python(live_ranks[r]), f"rank {r}"
    assert innermost_python(ranks[ODD])[0] == "skip_all_reduce"
    assert innermost_python(ranks[ODD])[2] == hs.hs_line("hang_gloo.py", "gloo-odd")
    for r in (0, 1, 3):
        assert innermost_python(ranks[r])[0] == "all_reduce"
    assert [(sorted(g["ranks"]), g["suspect"]) for g in doc["groups"]] == \
        [(sorted(g["ranks"]), g["suspect"]) for g in live["groups"]] == [([2], True), ([0, 1, 3], False)]
    assert doc["suspect_reasons"][0].startswith("rank 2 is not in all_reduce with ranks 0-1,3")
