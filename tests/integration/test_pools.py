"""Process pools and data loaders: the owner, its workers, the idle ones and the straggler.

Why: a multiprocessing Pool, a ProcessPoolExecutor, a torch DataLoader or a plain
producer/consumer pair is one owner and its forked workers, not peers. Grouped as peers the
owner (waiting for results) and the idle workers (each in another frame of the queue read)
were named suspects, the worker stuck in the user's task was one voice among many, and the
verdict changed from one dump to the next. Each test runs the real program, asserts the exact
verdict (roles, suspects, the first SUSPECT line, waits) and that two dumps in a row agree.
"""

import importlib.util
import os
import socket

import pytest

import hs_testlib as hs

PYTHON = "/usr/bin/python3"


def dump_job(pid, rcs=(0,)):
    run = hs.dump(pid, "--subprocesses")
    assert run.rc in rcs and run.doc, run.describe()
    return run.doc


def verdict(doc):
    return (doc["suspect_reasons"], doc["wait_chains"], doc["notes"],
            sorted(m["pid"] for m in doc["suspect_members"]))


def roles(doc):
    return {p["pid"]: p["role"] for p in doc["processes"]}


def children(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return sorted(int(c) for c in f.read().split())


def name(doc, pid):
    return f"{doc['processes'][0]['host']}:{pid}"


def pool_verdict(targets, source, workers=4, context="fork"):
    job = targets.start([PYTHON, str(hs.program_source(source)), hs.READY,
                         "--workers", workers, "--context", context], timeout=60)
    # spawn and forkserver start a resource tracker (and the forkserver, which forks the
    # workers): helpers, never suspects
    helpers = [k for k in children(job.pid)
               if any(h in " ".join(hs.cmdline(k)) for h in ("resource_tracker", "forkserver"))]
    servers = [k for k in helpers if "forkserver" in " ".join(hs.cmdline(k))]
    kids = sorted(set(children(job.pid)) - set(helpers) | {w for s in servers for w in children(s)})
    assert len(kids) == workers and len(helpers) == {"fork": 0, "spawn": 1}.get(context, 2)
    first = dump_job(job.pid)
    stuck = [p for p in first["processes"] if p["role"] == "worker"]
    assert len(stuck) == 1, roles(first)
    stuck = stuck[0]["pid"]
    assert roles(first) == {job.pid: "owner", **{k: "idle" for k in kids if k != stuck},
                            stuck: "worker", **{h: "helper" for h in helpers}}
    line = hs.hs_line(source, "work")
    assert verdict(first) == (
        [f"{name(first, stuck)}, a worker of {name(first, job.pid)}, is in work ({source}:{line})"
         f" while {workers - 1} other workers are idle"],
        [f"{name(first, job.pid)} waits for its worker process {name(first, stuck)}, in work "
         f"({source}:{line})"],
        [], [stuck])
    assert verdict(dump_job(job.pid)) == verdict(first)


def test_pool_map_names_the_worker_in_the_task(targets):
    pool_verdict(targets, "pool_hang.py")


def test_process_pool_executor_names_the_worker_in_the_task(targets):
    pool_verdict(targets, "executor_hang.py")


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_started_pool_workers_have_the_roles_of_forked_ones(targets, context):
    pool_verdict(targets, "pool_hang.py", context=context)


def test_spawn_process_pool_executor_names_the_worker_in_the_task(targets):
    pool_verdict(targets, "executor_hang.py", context="spawn")


def test_dataloader_names_the_worker_in_getitem(targets):
    if importlib.util.find_spec("torch") is None and not os.path.exists(
            "/usr/lib/python3/dist-packages/torch"):
        pytest.skip("python3-torch is not installed (tools/deps.sh test installs it)")
    source = "dataloader_hang.py"
    job = targets.start([PYTHON, str(hs.program_source(source)), hs.READY], timeout=120)
    first = dump_job(job.pid)
    stuck = [p["pid"] for p in first["processes"] if p["role"] == "worker"]
    idle = [p["pid"] for p in first["processes"] if p["role"] == "idle"]
    assert len(stuck) == 1 and len(idle) == 1 and sorted(stuck + idle) == children(job.pid)
    assert roles(first)[job.pid] == "owner"
    line = hs.hs_line(source, "getitem")
    place = f"Blocking.__getitem__ ({source}:{line})"
    assert verdict(first) == (
        [f"{name(first, stuck[0])}, a worker of {name(first, job.pid)}, is in {place}"
         " while 1 other worker is idle"],
        [f"{name(first, job.pid)} waits for its worker process {name(first, stuck[0])}, "
         f"in {place}"],
        [], stuck)
    assert verdict(dump_job(job.pid)) == verdict(first)


def test_a_rank_waits_for_its_dataloader_worker_in_getitem(targets):
    """Inside a rank job the loader's workers inherit RANK (helpers of their rank): the wait
    chain goes on from the rank to its stuck worker."""
    if not os.path.exists("/usr/lib/python3/dist-packages/torch"):
        pytest.skip("python3-torch is not installed (tools/deps.sh test installs it)")
    source = "dataloader_hang.py"
    env = dict(os.environ, RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    job = targets.start([PYTHON, str(hs.program_source(source)), hs.READY], timeout=120, env=env)
    first = dump_job(job.pid)
    helpers = {p["pid"]: p for p in first["processes"] if p["role"] == "helper"}
    assert sorted(helpers) == children(job.pid)
    stuck = [pid for pid, p in helpers.items()
             if any(f["function"] == "Blocking.__getitem__" for f in p["threads"][0]["frames"])]
    assert len(stuck) == 1, helpers
    line = hs.hs_line(source, "getitem")
    assert first["wait_chains"] == [
        f"rank 0 waits for its worker process {name(first, stuck[0])}, in Blocking.__getitem__ "
        f"({source}:{line})"]
    assert first["suspect_reasons"] == []
    assert verdict(dump_job(job.pid)) == verdict(first)


def test_producer_on_a_full_queue_and_its_dead_consumer(targets):
    source = "queue_put_hang.py"
    job = targets.start([PYTHON, str(hs.program_source(source)), hs.READY], timeout=60)
    consumer, producer = children(job.pid)
    assert hs.process_state(consumer) == "Z"
    first = dump_job(job.pid, (1,))  # partial: nothing of the zombie could be captured
    assert roles(first) == {job.pid: "owner", consumer: "worker", producer: "worker"}
    reasons, waits, notes, members = verdict(first)
    assert members == [consumer, producer]
    assert reasons[0] == (
        f"{name(first, producer)}, a worker of {name(first, job.pid)}, is in produce "
        f"({source}:{hs.hs_line(source, 'put')}) -> Queue.put (queues.py:89) while "
        f"{name(first, consumer)}, another worker, is dead")
    assert len(reasons) == 2 and reasons[1].startswith(f"pid {consumer} ")
    assert notes == []
    assert verdict(dump_job(job.pid, (1,))) == verdict(first)



def test_fork_storm_children_are_not_the_story(targets):
    storm = targets.start([hs.program("fork_storm"), hs.READY], main_parked=False, timeout=30)
    churned = 0  # dumps that found children (a dump can read /proc between two rounds)
    for _ in range(6):
        run = hs.dump(storm.pid, "--subprocesses")
        assert run.rc == 0 and run.doc, run.describe()
        doc = run.doc
        assert doc["suspect_reasons"] == [] and doc["suspect_members"] == [], doc["suspect_reasons"]
        assert "no such process" not in run.stderr, run.stderr
        # Children that ended during the capture are left out, in one line; any still there
        # are live workers or zombies of the parent, its owner.
        others = [p for p in doc["processes"] if p["pid"] != storm.pid]
        assert all(p["ppid"] == storm.pid and p["role"] == "worker" for p in others), others
        left_out = [d["message"] for d in doc["diagnostics"]
                    if d["message"].endswith(f"of pid {storm.pid} ended during the capture: left out")]
        assert len(left_out) <= 1, left_out
        if others or left_out:
            churned += 1
            assert hs.process_of(doc, storm.pid)["role"] == "owner"
        if churned >= 2:
            break
    assert churned >= 2


def clean_exit_verdict(targets, mode):
    """Workers that exited with code 0 (zombies their owner has not reaped yet) are no deaths:
    left out like reaped ones, in one info line; the verdict names only the stuck worker."""
    source = "workers_exit_clean.py"
    job = targets.start([PYTHON, str(hs.program_source(source)), hs.READY, "--mode", mode,
                         "--workers", 3], timeout=60)
    kids = children(job.pid)
    finished = [k for k in kids if hs.process_state(k) == "Z"]
    # process: 2 zombies; executor: those started after the stopped one (1 or 2)
    stuck = [k for k in kids if k not in finished]
    assert len(stuck) == 1 and len(finished) in (1, 2), [(k, hs.process_state(k)) for k in kids]
    doc = dump_job(job.pid)
    assert roles(doc) == {job.pid: "owner", stuck[0]: "worker"}
    n = len(finished)
    assert [d["message"] for d in doc["diagnostics"]] == [
        f"{n} forked worker{'s' if n > 1 else ''} of pid {job.pid} exited with code 0 "
        "(not reaped yet): left out"]
    assert verdict(dump_job(job.pid)) == verdict(doc)
    return doc, job.pid, stuck[0]


def test_workers_that_exited_cleanly_are_not_dead(targets):
    source = "workers_exit_clean.py"
    doc, owner, stuck = clean_exit_verdict(targets, "process")
    place = f"work ({source}:{hs.hs_line(source, 'work')})"
    assert verdict(doc) == (
        [f"{name(doc, stuck)}, the only worker of {name(doc, owner)}, is in {place}"],
        [f"{name(doc, owner)} waits for its worker process {name(doc, stuck)}, in {place}"],
        [], [stuck])


def test_executor_shutdown_workers_that_exited_cleanly_are_not_dead(targets):
    doc, owner, stopped = clean_exit_verdict(targets, "executor")
    assert verdict(doc) == ([f"process {name(doc, stopped)} is stopped (state T)"], [], [],
                            [stopped])
