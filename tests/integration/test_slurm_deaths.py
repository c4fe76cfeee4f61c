"""How a Slurm rank died, from the node's kernel log and Slurm's own accounting (sacct).

On the 3-node test cluster with accounting (MariaDB + slurmdbd) and task/cgroup (a step's --mem
is its memory cgroup's limit), a 3-rank job runs one step per rank (rank R on node n(R+1));
the ranks meet at a barrier the test holds and never opens. Rank 1 outgrows its step's 100 MiB
before it arrives: its step's cgroup OOM-kills it and slurmstepd reaps it, so node n2 keeps no
process of the job. `hangscan --slurm-job` must still say that rank 1 on n2 was killed by the
OOM killer in its Slurm cgroup, with Slurm's state of its step, exactly as the oracles have it:
the kernel log's own "Killed process" line and sacct's own record of the step.
"""

import re
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

import pytest

import browser
import hs_testlib as hs

sys.path.insert(0, str(hs.source_dir() / "tests" / "fanout"))
from slurm_testlib import HERE as FANOUT, PROGRAMS, SlurmCluster, _run, end_job  # noqa: E402
import hs_rank_ready  # noqa: E402

from test_deaths import kernel_kill_line, rss_of_kill_line  # noqa: E402

RANK_PY = FANOUT / "slurm_barrier_rank.py"
WORLD = 3
VICTIM = 1
STEP_MEM_MIB = 100


def marker_line(path, tag):
    lines = Path(path).read_text().splitlines()
    [n] = [i for i, t in enumerate(lines, 1) if re.search(rf"HS-LINE:\s*{tag}$", t)]
    return n


@pytest.fixture(scope="module")
def cluster():
    started = time.monotonic()
    with SlurmCluster(accounting=True, cgroup=True) as c:
        print(f"cluster with accounting and cgroups up in {time.monotonic() - started:.1f} s")
        yield c


def sacct_steps(cluster, job_id):
    p = cluster.run(["sacct", "-j", job_id, "-P", "-n", "-o", "JobID,State,ExitCode,NodeList"])
    return [line.split("|") for line in p.stdout.splitlines() if line]


@pytest.fixture
def oom_job(cluster):
    d = Path(tempfile.mkdtemp(prefix="hs-slurm-oom-"))
    rundir = d / "run"
    rundir.mkdir()
    store = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # the barrier: never says go
    store.bind(str(rundir / "barrier.sock"))
    store.listen(16)
    script = d / "job.sh"
    lines = ["#!/bin/sh"]
    for r in range(WORLD):
        extra = " --eat-memory" if r == VICTIM else ""
        lines.append(f"RANK={r} WORLD_SIZE={WORLD} srun -N1 -n1 -w n{r + 1} --mem={STEP_MEM_MIB}M "
                     f"/usr/bin/python3 {RANK_PY} {PROGRAMS} {rundir}{extra} &")
    lines.append("wait")
    script.write_text("\n".join(lines) + "\n")
    script.chmod(0o755)
    ctl = str(d / "ctl")
    env = dict(cluster.env, **{hs_rank_ready.CTL_ENV: ctl})
    job_id, pids = "", {}
    try:
        with hs_rank_ready.ParkCollector(ctl) as collector:
            p = _run(["sbatch", "--parsable", "-N", WORLD, "--mem=300M", "-o", d / "job.out",
                      "-D", d, script], env=env)
            job_id = p.stdout.strip().split(";")[0]
            survivors = [r for r in range(WORLD) if r != VICTIM]
            pids = collector.wait(survivors, timeout=90.0,
                                  alive=lambda: cluster.job_state(job_id) in ("PENDING", "RUNNING", "CONFIGURING"))
        # The victim's step has ended when sacct says so (deadline): the death is on record.
        end = time.monotonic() + 60
        while True:
            victim = [s for s in sacct_steps(cluster, job_id) if s[3] == f"n{VICTIM + 1}" and "." in s[0]
                      and not s[0].endswith((".batch", ".extern"))]
            if victim and victim[0][1] not in ("RUNNING", "PENDING", "COMPLETING"):
                break
            assert time.monotonic() < end, f"step of rank {VICTIM} never ended: {sacct_steps(cluster, job_id)}"
            time.sleep(0.2)
        yield job_id, pids, victim[0]
    finally:
        end_job(cluster, job_id, pids.values(), b"slurm_barrier_rank.py")
        store.close()
        shutil.rmtree(d, ignore_errors=True)


def test_oom_killed_rank_is_named_with_its_node_and_sacct_state(cluster, oom_job):
    job_id, pids, (step, state, exit_code, nodelist) = oom_job
    # sacct's own record (the oracle): the step of n2 ended OUT_OF_MEMORY.
    assert (state, exit_code, nodelist) == ("OUT_OF_MEMORY", "0:125", "n2")
    run = hs.run_hangscan(["--slurm-job", job_id, "--json"], env=cluster.env, timeout=120)
    assert run.rc == 1, run.describe()  # a rank is missing: partial
    doc = run.doc
    assert sorted(p["rank"] for p in doc["processes"] if p["role"] == "rank") == [0, 2]
    assert doc["missing_ranks"] == [VICTIM]
    assert doc["suspects"] == [VICTIM]
    [death] = doc["deaths"]
    kill = kernel_kill_line(death["pid"])  # the kernel's own record of that pid
    step_no = step.split(".")[1]
    cgroup = f"/slurm_n2/uid_0/job_{job_id}/step_{step_no}"
    assert death["how"] == "oom-kill" and death["host"] == "n2" and death["comm"] == "python3", death
    assert death["cgroup"] == cgroup and death["limit_bytes"] == STEP_MEM_MIB << 20, death
    assert death["rss_bytes"] == rss_of_kill_line(kill), (death, kill)
    assert death["slurm"] == {"step": step, "state": "OUT_OF_MEMORY", "exit_code": "0:125"}, death
    assert death["evidence"] == ["kernel log", "sacct"], death
    barrier = marker_line(RANK_PY, "barrier")
    rss_mib = round(death["rss_bytes"] / (1 << 20))
    [reason] = doc["suspect_reasons"]
    assert re.fullmatch(
        rf"rank 1 \(pid {death['pid']} on n2\) was killed by the kernel OOM killer at \d\d:\d\d:\d\d "
        rf"\(memory cgroup {re.escape(cgroup)}: limit 100 MiB, rss {rss_mib} MiB\); "
        rf"Slurm: step {re.escape(step)} OUT_OF_MEMORY \(exit code 0:125\); "
        rf"ranks 0,2 wait for it in barrier \(slurm_barrier_rank.py:{barrier}\)", reason), reason
    with tempfile.TemporaryDirectory(prefix="hs-slurm-html-") as tmp:
        page_file = Path(tmp) / "job.html"
        text = hs.run_hangscan(["--slurm-job", job_id, "--html", str(page_file)], env=cluster.env, timeout=120)
        assert reason in text.stdout, text.stdout
        # The page (--html beside the text) says the same in a browser (test_html_report.py).
        if shutil.which("chromium"):
            with browser.Browser(Path(tmp)) as b:
                page = b.open(page_file.as_uri())
                verdict = page.eval("document.getElementById('verdict').innerText").splitlines()
                assert f"SUSPECT {reason}" in verdict, verdict
                assert page.eval("[...document.querySelectorAll('#processes button.member')]"
                                 ".map(e => e.textContent)") == ["rank 0", "rank 2"]
            assert set(b.requests) <= {page_file.as_uri()}, b.requests
            assert b.console_errors == []
