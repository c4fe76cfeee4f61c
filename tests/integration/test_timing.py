"""Since when each rank waits, and its memory next to its stack (issue: the story of a hang).

Oracles: each rank writes CLOCK_MONOTONIC right before it blocks (staggered_wait.py), so a
thread's blocked_s must fall between what the test's own clock says before and after the dump;
VmRSS and the memory cgroup's files are read by the test itself. The cgroup test creates a v1
(or v2) memory cgroup, moves one target into it and removes it afterwards.
"""

import os
import re
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hs_testlib as hs  # noqa: E402

PYTHON = "/usr/bin/python3"
SLACK = 0.2    # the rank writes its time a moment before read() blocks (later under load)


def start_job(pool, tmp_path, *, world=4, late=1, delay=3.0, rss_mb=0):
    times = tmp_path / "times"
    job = pool.start([PYTHON, hs.program_source("staggered_wait.py"), hs.READY, "--world", world,
                      "--late", late, "--delay", delay, "--times", times, "--rss-mb", rss_mb],
                     timeout=90, main_parked=False)
    blocked_at = {}
    for line in times.read_text().split("\n"):
        if line.strip():
            rank, pid, tid, mono = line.split()
            blocked_at[int(rank)] = (int(pid), int(tid), float(mono))
    assert sorted(blocked_at) == list(range(world))
    return job, blocked_at


def ranks_of(doc):
    return {p["rank"]: p for p in doc["processes"] if p.get("rank") is not None}


def main_thread(proc):
    return next(t for t in proc["threads"] if t["is_main"])


def test_blocked_s_against_the_ranks_own_clock(targets, tmp_path):
    job, blocked_at = start_job(targets, tmp_path)
    before = time.clock_gettime(time.CLOCK_MONOTONIC)
    run = hs.dump(job.pid, "--subprocesses")
    after = time.clock_gettime(time.CLOCK_MONOTONIC)
    assert run.rc == 0, run.describe()
    ranks = ranks_of(run.doc)
    for rank, (pid, tid, mono) in blocked_at.items():
        t = main_thread(ranks[rank])
        assert t["tid"] == tid and t["state"] == "S"
        low, high = before - mono - SLACK, after - mono + SLACK
        assert low <= t["blocked_s"] <= high, (rank, t["blocked_s"], low, high)
    # The group of all four: rank 1 arrived last, 3 s after the others.
    group = next(g for g in run.doc["groups"] if g["ranks"] == [0, 1, 2, 3])
    wait = group["wait"]
    assert wait["last"]["rank"] == 1 and wait["last"]["pid"] == blocked_at[1][0]
    first = min(m for r, (_, _, m) in blocked_at.items())
    spread = blocked_at[1][2] - first
    assert abs(wait["spread_s"] - spread) <= 2 * SLACK, (wait, spread)
    assert wait["longest_s"] - wait["shortest_s"] == pytest.approx(wait["spread_s"])


def test_timing_in_the_text_report(targets, tmp_path):
    job, blocked_at = start_job(targets, tmp_path, delay=2.0)
    run = hs.dump(job.pid, "--subprocesses", as_json=False)
    assert run.rc == 0, run.describe()
    line = hs.hs_line("staggered_wait.py", "wait_in_recv")
    timing = [l for l in run.stdout.splitlines() if l.startswith("timing: ")]
    assert len(timing) == 1, run.stdout
    head = f"timing: ranks 0-3 in wait_in_recv (staggered_wait.py:{line}): blocked "
    assert timing[0].startswith(head), timing
    m = re.search(r", arrived over (\d+\.\d) s, rank 1 last$", timing[0])
    assert m, timing
    first = min(mono for _, _, mono in blocked_at.values())
    spread = blocked_at[1][2] - first   # the ranks' own clocks: rank 1 slept 2 s, the others
    assert abs(float(m.group(1)) - spread) <= 2 * SLACK, (timing, spread)   # started in turn
    # Every rank's main thread says how long it has been blocked.
    mains = [l for l in run.stdout.splitlines()
             if re.match(r'\s*Thread \d+ "[^"]*" \((Python "[^"]*", )?main, ', l)]
    assert len(mains) >= 4 and all(", blocked " in l for l in mains[:4]), mains


def test_running_threads_have_no_blocked_time(targets):
    busy = targets.start([hs.program("busy")])
    run = hs.dump(busy.pid, "--native")
    states = {t["tid"]: (t["state"], t["blocked_s"]) for t in hs.process_of(run.doc, busy.pid)["threads"]}
    assert any(s == "R" for s, _ in states.values()), states
    for state, blocked in states.values():
        assert (blocked is None) == (state == "R"), states


def vm_rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_rss_is_the_kernels(targets, tmp_path):
    job, blocked_at = start_job(targets, tmp_path, world=2, delay=0.1, rss_mb=64)
    before = {pid: vm_rss(pid) for pid, _, _ in blocked_at.values()}
    run = hs.dump(job.pid, "--subprocesses")
    for rank, (pid, _, _) in blocked_at.items():
        mem = ranks_of(run.doc)[rank]["memory"]
        # Resuming from the stop may touch a page or two: the figure lies between the
        # kernel's before and after.
        low, high = sorted((before[pid], vm_rss(pid)))
        assert low <= mem["rss_bytes"] <= high and mem["rss_bytes"] >= 64 << 20, (mem, low, high)
        assert mem["peak_rss_bytes"] >= mem["rss_bytes"]


def test_memory_cgroup_and_its_limit(targets, tmp_path):
    limit = 512 << 20
    cg = hs.MemoryCgroup(limit)
    try:
        job, blocked_at = start_job(targets, tmp_path, world=2, delay=0.1, rss_mb=32)
        pid = blocked_at[0][0]
        cg.add(pid)
        run = hs.dump(job.pid, "--subprocesses")
        mem = ranks_of(run.doc)[0]["memory"]
        assert mem["cgroup"] == cg.rel and mem["cgroup_limit_bytes"] == limit, mem
        # Charged pages stay with the cgroup they were charged to: the moved rank's usage is
        # what it touched since (a few pages), read again now.
        assert abs(mem["cgroup_usage_bytes"] - cg.usage()) <= 1 << 20, (mem, cg.usage())
        other = ranks_of(run.doc)[1]["memory"]
        assert other["cgroup"] != cg.rel
        text = hs.dump(job.pid, "--subprocesses", as_json=False).stdout
        assert re.search(r"rank 0 .* rss \d+\.\d MiB of 512\.0 MiB \(cgroup\)", text), text
    finally:
        for t in targets.targets:
            t.kill()
        cg.close()


def test_samples_keep_counting_from_before_the_first_stop(targets, tmp_path):
    # Every capture stops and resumes the ranks, which the scheduler records as running; the
    # report of --samples must still count from when each rank really blocked.
    job, blocked_at = start_job(targets, tmp_path, world=2, delay=1.0)
    before = time.clock_gettime(time.CLOCK_MONOTONIC)
    run = hs.dump(job.pid, "--subprocesses", "--samples", "3", "--interval", "0.5")
    after = time.clock_gettime(time.CLOCK_MONOTONIC)
    assert run.rc == 0, run.describe()
    for rank, (pid, tid, mono) in blocked_at.items():
        t = main_thread(ranks_of(run.doc)[rank])
        low, high = before - mono - SLACK, after - mono + SLACK
        assert low <= t["blocked_s"] <= high, (rank, t["blocked_s"], low, high)
        # Without carrying, the last sample would count from the previous stop (0.5 s).
        assert t["blocked_s"] >= 1.0 + (blocked_at[1][2] - mono) - SLACK, t
