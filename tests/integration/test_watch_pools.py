"""`hangscan watch` on a process pool, and the ptrace fallback's words (docs/watch.md).

Why: watch must give the verdict `dump` gives (tests/integration/test_pools.py): the owner of a
pool is not grouped with its workers, idle workers are idle, the worker in the user's task is the
one suspect, named at its function and line. The ptrace fallback must never report a thread on
CPU more than 100% of the window, and reads a zombie's exit status as `dump` does.

Run under `flock /tmp/hs-bpf.lock` (the eBPF test loads the recorder).
"""
from __future__ import annotations

import re

import pytest

import hs_testlib as hs
from test_watch import ebpf, pool  # noqa: F401  (fixtures)

PY = "/usr/bin/python3"


def children(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return sorted(int(c) for c in f.read().split())


def watch(pid, *extra, seconds=2):
    run = hs.run_hangscan(["watch", "--pid", pid, "--subprocesses", "--for", seconds, "--json",
                           *extra], timeout=90)
    assert run.rc == 0 and run.doc, run.describe()
    return run.doc


def pool_verdict(pool, *extra, context="fork"):  # noqa: F811
    job = pool.start([PY, str(hs.program_source("pool_hang.py")), hs.READY, "--context", context],
                     timeout=60)
    doc = watch(job.pid, *extra)
    roles = {p["pid"]: p["role"] for p in doc["processes"]}
    stuck = [pid for pid, role in roles.items() if role == "worker"]
    assert len(stuck) == 1, roles
    stuck = stuck[0]
    tracker = [k for k in children(job.pid) if "resource_tracker" in " ".join(hs.cmdline(k))]
    assert len(tracker) == (context == "spawn"), tracker
    assert roles == {job.pid: "owner", stuck: "worker", **{t: "helper" for t in tracker},
                     **{k: "idle" for k in children(job.pid) if k not in [stuck] + tracker}}
    line = hs.hs_line("pool_hang.py", "work")
    assert doc["suspect_reasons"] == [
        f"pid {stuck}, a worker of pid {job.pid}, is in work (pool_hang.py:{line}) while 3 other "
        "workers are idle"]
    assert doc["group_notes"] == [f"pid {job.pid} waits for its worker pid {stuck}, in work "
                                  f"(pool_hang.py:{line})"]
    assert [(g["pids"], g["suspect"]) for g in doc["groups"]] == [([stuck], True)]
    # the straggler's group says where it is, in words (the window's length varies)
    assert re.fullmatch(rf"slept in work \(pool_hang\.py:{line}\) for the whole window "
                        r"\(clock_nanosleep\(\) for \d+\.\d s\)", doc["groups"][0]["what"]), doc
    return job


def test_watch_names_the_pool_worker_in_its_task(ebpf, pool):  # noqa: F811
    pool_verdict(pool)


def test_ptrace_fallback_names_the_pool_worker_in_its_task(pool):  # noqa: F811
    """No sleeping stack is copied without eBPF: a worker's Python frames, read without
    stopping it, tell idle workers from the one in the task."""
    pool_verdict(pool, "--ptrace")


def test_ptrace_fallback_gives_a_spawn_pool_the_roles_of_a_fork_pool(pool):  # noqa: F811
    """spawn workers have a command line of their own (ranks of unknown number to discovery):
    their Python frames are read too, and the pool's loop in them makes them workers."""
    pool_verdict(pool, "--ptrace", context="spawn")


def test_ptrace_shares_stay_within_one_cpu_per_thread(pool):  # noqa: F811
    busy = pool.start([hs.program("busy"), hs.READY])
    doc = watch(busy.pid, "--ptrace", seconds=4)
    assert doc["recorder"] == "ptrace"
    p = doc["processes"][0]
    # One thread spins: at most one CPU, however many samples the ticks gave it.
    assert p["samples"] >= 4 and 0.5 <= p["cpu_share"] <= 1.0, p


def test_ptrace_reads_a_zombies_exit_status(pool):  # noqa: F811
    job = pool.start([PY, str(hs.program_source("queue_put_hang.py")), hs.READY], timeout=60)
    consumer = children(job.pid)[0]
    assert hs.process_state(consumer) == "Z"
    doc = watch(job.pid, "--ptrace")
    dead = next(p for p in doc["processes"] if p["pid"] == consumer)
    assert dead["exit"] == "killed by SIGKILL" and dead["role"] == "worker", dead
    assert dead["behaviour"]["what"] == "killed by SIGKILL", dead
    exits = [t for t in doc["timeline"] if t["kind"] == "exit" and t["pid"] == consumer]
    assert len(exits) == 1 and exits[0]["signal"] == 9, doc["timeline"]
    assert exits[0]["text"] == f"pid {consumer} killed by SIGKILL", exits
    # The producer's verdict is dump's: in its own code beside its dead sibling (its main
    # thread's wait, not the queue's feeder thread that began waiting a moment earlier).
    producer = children(job.pid)[1]
    put = f"produce (queue_put_hang.py:{hs.hs_line('queue_put_hang.py', 'put')})"
    assert doc["suspect_reasons"] == [
        f"pid {producer}, a worker of pid {job.pid}, is in {put} -> Queue.put (queues.py:89) "
        f"while pid {consumer}, another worker, is dead", f"pid {consumer} is dead (state X)"]
    assert doc["group_notes"] == [
        f"pid {job.pid} waits for its worker pid {producer}, in {put} -> Queue.put (queues.py:89)"]
    assert [(g["pids"], g["suspect"]) for g in doc["groups"]] == [([consumer], True),
                                                                  ([producer], True)]
    assert re.fullmatch(rf"waited in {re.escape(put)} for the whole window "
                        r"\(futex\(\) for \d+\.\d s\)", doc["groups"][1]["what"]), doc["groups"]
