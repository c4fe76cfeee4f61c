"""`hangscan --slurm-job ID` on a real 3-node Slurm 22.05 cluster (tests/fanout/cluster.sh).

A 6-rank ring all-reduce runs as a Slurm job over n1..n3 (2 ranks per node); rank 3 (on n2)
waits for a checkpoint instead of joining. hangscan must name exactly rank 3 and node n2, from
a login shell and from inside the allocation (srun --overlap), write per-node files, and
report a node whose slurmd is gone as unreachable while reporting the others (exit 1).
The cluster is started once for the module and always stopped (every daemon by pid).
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import hs_testlib as hs

sys.path.insert(0, str(hs.source_dir() / "tests" / "fanout"))
from slurm_testlib import RingJob, SlurmCluster  # noqa: E402

ODD = 3
WORLD = 6


@pytest.fixture(scope="module")
def cluster():
    with SlurmCluster() as c:
        yield c


@pytest.fixture(scope="module")
def job(cluster):
    with RingJob(cluster, nodes=3, per_node=2, odd=ODD) as j:
        yield j


def slurm_hangscan(cluster, *args, timeout=120.0):
    return hs.run_hangscan(list(args), env=cluster.env, timeout=timeout)


def python_functions(proc):
    main = next(t for t in proc["threads"] if t["is_main"])
    return [(f["function"], f["line"]) for f in main["frames"] if f["kind"] == "python"]


def check_ring_report(doc, job):
    assert doc["job_id"] == job.job_id
    ranks = sorted(p["rank"] for p in doc["processes"] if p["role"] == "rank")
    assert ranks == list(range(WORLD)), [(p["pid"], p["rank"], p["role"], p["cmdline"]) for p in doc["processes"]]
    for p in doc["processes"]:
        if p["role"] == "rank":
            assert p["host"] == job.node_of(p["rank"]), p
            assert p["pid"] == job.pids[p["rank"]]
    assert doc["suspects"] == [ODD]
    assert doc["suspect_members"] == [{"host": "n2", "pid": job.pids[ODD], "rank": ODD}]
    assert doc["missing_ranks"] == []
    assert doc["unreachable"] == []
    odd_line = hs.hs_line("ring_allreduce.py", "odd")
    recv_line = hs.hs_line("ring_allreduce.py", "recv")
    for p in doc["processes"]:
        if p["role"] != "rank":
            continue
        funcs = python_functions(p)
        if p["rank"] == ODD:
            assert ("wait_for_checkpoint", odd_line) in funcs, funcs
        else:
            assert ("all_reduce", recv_line) in funcs, funcs


def test_login_node_names_the_odd_rank_and_its_node(cluster, job):
    run = slurm_hangscan(cluster, "--slurm-job", job.job_id, "--json", "--timeout", "60")
    assert run.rc == 0, run.describe()
    check_ring_report(run.doc, job)


def test_jobid_alias_and_text_report(cluster, job):
    run = slurm_hangscan(cluster, "--jobid", job.job_id, "--timeout", "60")
    assert run.rc == 0, run.describe()
    assert "rank 3" in run.stdout and "n2" in run.stdout, run.stdout


def test_from_inside_the_allocation(cluster, job):
    # The front end runs as a step of the job itself, with the outer step's SLURM_* set.
    argv = ["srun", f"--jobid={job.job_id}", "--overlap", "--gres=gpu:0", "-N", "1", "-n", "1", "-w", "n1",
            hs.hangscan_bin(), "--slurm-job", job.job_id, "--json", "--timeout", "60"]
    p = subprocess.run(argv, env=cluster.env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, f"{p.stderr}\n{p.stdout[:3000]}"
    doc = json.loads(p.stdout)
    check_ring_report(doc, job)
    # Neither the front end's step nor the agents are mistaken for ranks.
    exes = {Path(p["exe"] or "").name for p in doc["processes"]}
    assert "hangscan" not in exes, exes


def test_output_dir_has_one_file_per_node(cluster, job):
    with tempfile.TemporaryDirectory(prefix="hs-out-") as out:
        run = slurm_hangscan(cluster, "--slurm-job", job.job_id, "--json", "--output", out, "--timeout", "60")
        assert run.rc == 0, run.describe()
        names = sorted(os.listdir(out))
        assert names == ["n1.txt", "n2.txt", "n3.txt", "report.json", "report.txt"], names
        n2 = Path(out, "n2.txt").read_text()
        assert "wait_for_checkpoint" in n2, n2
        assert "wait_for_checkpoint" not in Path(out, "n1.txt").read_text()
        assert json.loads(Path(out, "report.json").read_text())["suspects"] == [ODD]
        assert "rank 3" in Path(out, "report.txt").read_text()


def test_folded_format(cluster, job):
    run = slurm_hangscan(cluster, "--slurm-job", job.job_id, "--format", "folded", "--timeout", "60")
    assert run.rc == 0, run.describe()
    lines = [l for l in run.stdout.splitlines() if l.strip()]
    counts = {l.rsplit(" ", 1)[0].split(";")[-1]: int(l.rsplit(" ", 1)[1]) for l in lines}
    assert sum(counts.values()) == WORLD, run.stdout


def test_unknown_and_bad_job_ids(cluster):
    run = slurm_hangscan(cluster, "--slurm-job", "999999", "--json")
    assert run.rc == 2, run.describe()
    assert "Slurm job 999999 not found" in run.stderr
    run = slurm_hangscan(cluster, "--slurm-job", "12;reboot")
    assert run.rc == 64, run.describe()
    assert "bad job id" in run.stderr


def test_stopped_slurmd_is_unreachable(cluster, job):
    # Last in this module: n3 stays without slurmd until the cluster is stopped.
    pid = cluster.pid_of("slurmd-n3")
    os.kill(pid, 15)
    hs.wait_for(lambda: not os.path.exists(f"/proc/{pid}"), 30, "slurmd n3 to exit")
    run = slurm_hangscan(cluster, "--slurm-job", job.job_id, "--json", "--timeout", "40")
    assert run.rc == 1, run.describe()
    doc = run.doc
    assert [u["host"] for u in doc["unreachable"]] == ["n3"], doc["unreachable"]
    assert "Communication connection failure" in doc["unreachable"][0]["reason"] or \
        "no answer" in doc["unreachable"][0]["reason"], doc["unreachable"]
    ranks = sorted(p["rank"] for p in doc["processes"] if p["role"] == "rank")
    assert ranks == [0, 1, 2, 3]
    assert doc["missing_ranks"] == [4, 5]
    assert ODD in doc["suspects"]
    assert "node n3 unreachable" in run.stderr
