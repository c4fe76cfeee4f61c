"""`--slurm-job J --logs ...` on a real Slurm job whose ranks write their own logs (issue 35).

On the 3-node test cluster, a 6-rank ring job (tests/fanout/slurm_log_ring.py) where each task's
stdout goes to its own file (srun -o ring-%j-%t.out, Slurm's per-task naming); every rank logs
what it is about to do, then rank 3 waits for a checkpoint while the others wait in the ring's
all_reduce. hangscan must name rank 3 and put its last line ("saving checkpoint ...") in its
SUSPECT sentence, and list every rank's last line beside its frame in the JSON. And `pdsh
--logs` (pdsh -R exec, the agent on "host" n1) on three local ranks of test_logs_join.py.
A real step OOM-killed in its memory cgroup (a cluster with task/cgroup): `hangscan logs` on
the batch output names it from slurmstepd's and srun's own lines. A real time limit takes over
a minute (Slurm's limits are whole minutes): its batch output is a fixture from a real run,
read in tests/unit/logs/log_test.cpp (LogRealSlurm), as is an OOM run's.
"""

import contextlib
import grp
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import hs_testlib as hs

sys.path.insert(0, str(hs.source_dir() / "tests" / "fanout"))
from slurm_testlib import PROGRAMS, RingJob, SlurmCluster  # noqa: E402
from test_slurm import cluster  # noqa: E402,F401  (the 3-node cluster, one per module)
from test_logs_join import start_ranks  # noqa: E402  (three local ranks with dated logs)

ODD, WORLD = 3, 6


@pytest.fixture(scope="module")
def job(cluster):
    with RingJob(cluster, nodes=3, per_node=2, odd=ODD, program="slurm_log_ring.py",
                 srun_args="-o ring-%j-%t.out") as j:
        yield j


def test_slurm_job_with_logs_puts_the_hung_ranks_last_line_beside_its_stack(cluster, job):
    logs = f"{job.dir}/ring-{job.job_id}-*.out"
    run = hs.run_hangscan(["--slurm-job", job.job_id, "--logs", logs, "--json", "--timeout", "60"],
                          env=cluster.env, timeout=120)
    assert run.rc == 0, run.describe()
    doc = run.doc
    assert doc["suspects"] == [ODD]
    odd_line = hs.hs_line("ring_allreduce.py", "odd")
    recv_line = hs.hs_line("ring_allreduce.py", "recv")
    last = {e["rank"]: e for e in doc["last_logs"]}
    assert sorted(last) == list(range(WORLD))
    for r, e in last.items():
        said = "saving checkpoint to /ckpt/step-42" if r == ODD else "step 42 all_reduce"
        where = (f"wait_for_checkpoint (ring_allreduce.py:{odd_line})" if r == ODD
                 else f"all_reduce (ring_allreduce.py:{recv_line})")
        assert (e["file"], e["line"], e["kind"], e["text"], e["where"]) == (
            f"{job.dir}/ring-{job.job_id}-{r}.out", 2, "last_line", f"rank {r}: {said}", where), e
        assert 0 <= e["before_capture_s"] < 120, e  # no date on the line: the file's last write
    [reason] = doc["suspect_reasons"]
    age = round(last[ODD]["before_capture_s"])
    assert reason.endswith(f'; last log: "rank 3: saving checkpoint to /ckpt/step-42" '
                           f'(ring-{job.job_id}-3.out:2, {age} s before the dump)'), reason
    text = hs.run_hangscan(["--slurm-job", job.job_id, "--logs", logs, "--timeout", "60"],
                           env=cluster.env, timeout=120)
    [suspect] = [t for t in text.stdout.splitlines() if t.startswith("SUSPECT")]
    assert re.fullmatch(rf'SUSPECT rank 3 .*wait_for_checkpoint \(ring_allreduce.py:{odd_line}\).*; '
                        rf'last log: "rank 3: saving checkpoint to /ckpt/step-42" '
                        rf'\(ring-{job.job_id}-3.out:2, \d+ s before the dump\)', suspect), suspect


def test_pdsh_with_logs_joins_the_agents_capture_with_the_logs(targets, tmp_path):
    if shutil.which("pdsh") is None:
        pytest.skip("pdsh is not installed (tools/deps.sh test installs it)")
    logs = tmp_path / "logs"
    logs.mkdir()
    pids = start_ranks(targets, logs)
    run = hs.run_hangscan(["pdsh", "-R", "exec", "-w", "n1", "--match", f"{logs}/train-5-",
                           "--logs", str(logs), "--json", "--timeout", "60"], timeout=120)
    assert run.rc == 0, run.describe()
    doc = run.doc
    assert sorted(p["pid"] for p in doc["processes"]) == sorted(pids)
    assert doc["suspects"] == [2]
    assert [(e["rank"], e["file"], e["line"]) for e in doc["last_logs"]] == [
        (r, f"{logs}/train-5-{r}.out", 2) for r in range(3)]
    [reason] = doc["suspect_reasons"]
    assert re.search(r'; last log: "[^"]* INFO rank 2: loading batch 17 from shard-3" '
                     r'\(train-5-2.out:2, 3\d s before the dump\)$', reason), reason


@pytest.fixture(scope="module")
def cgroup_cluster():
    with SlurmCluster(cgroup=True) as c:
        yield c


def test_logs_names_a_real_step_oom_killed_in_its_cgroup(cgroup_cluster, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n"
                      "srun -N1 -n1 --mem=100M /usr/bin/python3 -c 'import sys; "
                      f"sys.path.insert(0, \"{PROGRAMS}\"); from ring_allreduce import eat_memory; "
                      "eat_memory()'\n")
    script.chmod(0o755)
    job = cgroup_cluster.run(["sbatch", "--parsable", "-N1", "--mem=300M", "-o",
                              str(tmp_path / "slurm-%j.out"), "-D", str(tmp_path), str(script)])
    job_id = job.stdout.strip().split(";")[0]
    end = time.monotonic() + 90
    while cgroup_cluster.job_state(job_id):
        assert time.monotonic() < end, f"job {job_id} still {cgroup_cluster.job_state(job_id)}"
        time.sleep(0.2)
    out = tmp_path / f"slurm-{job_id}.out"
    run = hs.run_hangscan(["logs", str(out), "--json"])
    assert run.rc == 0, run.describe()
    # slurmstepd and srun write concurrently: either line may come first.
    lines = out.read_text().splitlines()
    assert len(lines) == 2, lines
    oom_at = 1 + next(i for i, t in enumerate(lines) if "oom-kill" in t)
    events = sorted((e["kind"], e["line"], e["rank"], e["host"], e["op"], e["what"])
                    for e in run.doc["events"])
    assert events == [("slurm_oom", oom_at, None, "", "Out Of Memory", f"StepId={job_id}.0"),
                      ("srun_task", 3 - oom_at, 0, "n1", "Out Of Memory", "task 0")], lines
    text = hs.run_hangscan(["logs", str(out)]).stdout
    assert (f"died: no rank: slurm: oom-kill in StepId={job_id}.0 (its memory cgroup's limit) "
            f"(slurm-{job_id}.out:{oom_at})\n") in text, text
    assert f"died: rank 0: srun: Out Of Memory (slurm-{job_id}.out:{3 - oom_at})\n" in text, text


@contextlib.contextmanager
def ring_job_logs(cluster, srun_args):
    """The ring job with `srun SRUN_ARGS`, and `--slurm-job J --job-logs --json` run on it."""
    with RingJob(cluster, nodes=3, per_node=2, odd=ODD, program="slurm_log_ring.py",
                 srun_args=srun_args) as job:
        run = hs.run_hangscan(["--slurm-job", job.job_id, "--job-logs", "--json", "--timeout", "60"],
                              env=cluster.env, timeout=120)
        assert run.rc == 0, run.describe()
        yield job, run


def test_slurm_job_logs_reads_the_jobs_own_output_as_its_user(cluster):
    # Everything in the batch output, each line labelled by srun --label ("3: ..."), found
    # through scontrol's StdOut and read with the job's user's rights.
    with ring_job_logs(cluster, "--label") as (job, run):
        doc = run.doc
        assert doc["suspects"] == [ODD]
        last = {e["rank"]: e for e in doc["last_logs"]}
        assert sorted(last) == list(range(WORLD))
        for r, e in last.items():
            said = "saving checkpoint to /ckpt/step-42" if r == ODD else "step 42 all_reduce"
            assert (e["file"], e["kind"], e["text"]) == (
                f"{job.dir}/job.out", "last_line", f"{r}: rank {r}: {said}"), e
        [reason] = doc["suspect_reasons"]
        assert re.search(rf'; last log: "3: rank 3: saving checkpoint to /ckpt/step-42" '
                         rf'\(job.out:{last[ODD]["line"]}(, \d+ s before the dump)?\)$', reason), reason


def test_job_logs_reads_the_output_with_the_jobs_users_rights_not_roots(cluster):
    # A job of nobody whose StdOut is a file nobody may write but not read (root could): hangscan,
    # as root, must not show a byte of it.
    d = Path(tempfile.mkdtemp(prefix="hs-job-logs-"))
    d.chmod(0o755)
    secret = d / "secret.out"
    secret.write_text("TOP SECRET\n")
    os.chown(secret, hs.NOBODY, -1)
    secret.chmod(0o200)
    job_id = ""
    try:
        p = subprocess.run(["runuser", "-u", "nobody", "--", "sbatch", "--parsable", "--open-mode=append",
                            "-o", str(secret), "-D", "/", "--wrap", "sleep 300"],
                           env=cluster.env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        job_id = p.stdout.strip().split(";")[0]
        end = time.monotonic() + 30
        while cluster.job_state(job_id) != "RUNNING":
            assert time.monotonic() < end, cluster.job_state(job_id)
            time.sleep(0.1)
        run = hs.run_hangscan(["--slurm-job", job_id, "--job-logs", "--json", "--timeout", "30"],
                              env=cluster.env, timeout=120)
        assert f"hangscan: --logs: {secret}: the process's user (uid {hs.NOBODY}) may not read it\n" in run.stderr, \
            run.describe()
        assert "TOP SECRET" not in run.stdout + run.stderr
    finally:
        if job_id:
            cluster.run(["scancel", job_id], check=False)
        shutil.rmtree(d, ignore_errors=True)


def test_job_logs_expands_the_batch_steps_pattern_and_reads_through_a_supplementary_group(cluster):
    # A job of nobody whose StdOut names Slurm's per-task patterns: scontrol shows %t, %N and %n
    # as given (it expands only the job's own, %j); slurmstepd wrote the batch step's file as
    # task 0 on the batch host's host name, node 0. Once written, the file is made root's and
    # readable only by a group nobody is a supplementary member of: read as nobody with nobody's
    # groups, hangscan must show its line.
    group = f"hs-logs-{os.getpid()}"
    d = Path(tempfile.mkdtemp(prefix="hs-job-logs-"))
    d.chmod(0o777)
    job_id = ""
    subprocess.run(["groupadd", group], check=True)
    try:
        subprocess.run(["gpasswd", "-a", "nobody", group], check=True, capture_output=True)
        p = subprocess.run(["runuser", "-u", "nobody", "--", "sbatch", "--parsable",
                            "-o", f"{d}/out-%j-%t-%N-%n.log", "-D", "/", "--wrap",
                            "echo 'rank 0: step 7 loaded'; exec sleep 300"],
                           env=cluster.env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        job_id = p.stdout.strip().split(";")[0]
        out = d / f"out-{job_id}-0-{socket.gethostname().split('.')[0]}-0.log"
        end = time.monotonic() + 30
        while not (out.exists() and out.read_text()):
            assert time.monotonic() < end, (cluster.job_state(job_id), list(d.iterdir()))
            time.sleep(0.1)
        shown = cluster.run(["scontrol", "show", "job", job_id]).stdout
        assert f"StdOut={d}/out-{job_id}-%t-%N-%n.log\n" in shown, shown
        os.chown(out, 0, grp.getgrnam(group).gr_gid)
        out.chmod(0o040)
        run = hs.run_hangscan(["--slurm-job", job_id, "--job-logs", "--json", "--timeout", "30"],
                              env=cluster.env, timeout=120)
        assert "--logs" not in run.stderr, run.describe()
        assert [(e["file"], e["line"], e["text"]) for e in run.doc["last_logs"]] == [
            (str(out), 1, "rank 0: step 7 loaded")], run.describe()
    finally:
        if job_id:
            cluster.run(["scancel", job_id], check=False)
        subprocess.run(["groupdel", group], check=False)
        shutil.rmtree(d, ignore_errors=True)


def test_watchdog_of_a_slurm_job_with_job_logs_puts_the_batch_outputs_lines_in_its_bundle(cluster, tmp_path):
    # `watch --slurm-job J --stall 3 --job-logs`: the ring job (srun --label into the batch
    # output) makes no progress, the watchdog's bundle is the capture of every node, and each
    # rank's last labelled line of the job's StdOut (found through scontrol, read as its user)
    # stands beside its stack.
    from test_watch import ebpf_unready
    if reason := ebpf_unready():
        pytest.skip(reason)
    with RingJob(cluster, nodes=3, per_node=2, odd=ODD, program="slurm_log_ring.py",
                 srun_args="--label") as job:
        run = hs.run_hangscan(["watch", "--slurm-job", job.job_id, "--stall", "3", "--once",
                               "--job-logs", "--output", str(tmp_path / "out")],
                              env=cluster.env, timeout=120)
        assert run.rc == 0, run.describe()
        m = re.search(r"capture written to (\S+)$", run.stdout, re.M)
        assert m, run.describe()
        report = json.loads((Path(m.group(1)) / "report.json").read_text())
        assert report["suspects"] == [ODD]
        last = {e["rank"]: (e["file"], e["text"]) for e in report["last_logs"]}
        assert last == {r: (f"{job.dir}/job.out", f"{r}: rank {r}: " + (
            "saving checkpoint to /ckpt/step-42" if r == ODD else "step 42 all_reduce"))
            for r in range(WORLD)}
        [reason] = report["suspect_reasons"]
        assert '; last log: "3: rank 3: saving checkpoint to /ckpt/step-42" (job.out:' in reason, reason
        from test_watch_slurm import node_local_watches
        hs.wait_for(lambda: not node_local_watches(job.job_id), 30, "the node-local watches to end")


def test_job_logs_finds_every_tasks_file_the_steps_srun_names(cluster):
    # The batch script runs `srun --output out-%2t.log -e err-%j.%s-%n-%N-%t.log ...` (relative
    # names, in the job's directory): scontrol shows no StdOut for a step, so the names come from
    # the step's srun (scontrol's SrunHost:Pid, its /proc command line and working directory),
    # expanded for each of the 6 tasks; every file is found (no "--logs: PATH: not found" line),
    # and each rank's last line is its own file's.
    with ring_job_logs(cluster, "--output out-%2t.log -e err-%j.%s-%n-%N-%t.log") as (job, run):
        assert "--logs" not in run.stderr, run.describe()
        host = socket.gethostname().split(".")[0]
        assert sorted(p.name for p in job.dir.glob("err-*")) == [
            f"err-{job.job_id}.0-{r // 2}-{host}-{r}.log" for r in range(WORLD)]
        doc = run.doc
        assert doc["suspects"] == [ODD]
        assert [(e["rank"], e["file"], e["line"], e["text"]) for e in doc["last_logs"]] == [
            (r, f"{job.dir}/out-{r:02}.log", 2, f"rank {r}: " + (
                "saving checkpoint to /ckpt/step-42" if r == ODD else "step 42 all_reduce"))
            for r in range(WORLD)]
        [reason] = doc["suspect_reasons"]
        assert '; last log: "rank 3: saving checkpoint to /ckpt/step-42" (out-03.log:2, ' in reason, reason


def test_job_logs_of_a_job_started_by_srun_reads_its_srun_o_file(cluster, tmp_path):
    # A job started by srun (no batch script) has no StdOut in scontrol; its task wrote to
    # srun -o's file, named on the srun's command line (SrunHost:Pid of its step).
    srun = subprocess.Popen(["srun", "-J", "hs-srun-job", "-N1", "-n1", "-o", str(tmp_path / "out-%t.log"),
                             "sh", "-c", "echo 'rank 0: started'; exec sleep 300"],
                            env=cluster.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    job_id = ""
    try:
        end = time.monotonic() + 30
        while not job_id or not ((tmp_path / "out-0.log").exists() and (tmp_path / "out-0.log").stat().st_size):
            assert time.monotonic() < end and srun.poll() is None, "srun's job did not start"
            job_id = cluster.run(["squeue", "-h", "-t", "RUNNING", "-n", "hs-srun-job",
                                  "-o", "%i"]).stdout.strip()
            time.sleep(0.1)
        run = hs.run_hangscan(["--slurm-job", job_id, "--job-logs", "--json", "--timeout", "30"],
                              env=cluster.env, timeout=120)
        assert "--job-logs" not in run.stderr and "--logs" not in run.stderr, run.describe()
        assert [(e["rank"], e["file"], e["line"], e["text"]) for e in run.doc["last_logs"]] == [
            (0, str(tmp_path / "out-0.log"), 1, "rank 0: started")], run.describe()
    finally:
        if job_id:
            cluster.run(["scancel", job_id], check=False)
        try:
            srun.wait(timeout=30)
        except subprocess.TimeoutExpired:
            srun.kill()
            srun.wait()
