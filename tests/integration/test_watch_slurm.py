"""`hangscan watch --slurm-job ID`: the recorder on every node of a real 3-node Slurm cluster.

Real BPF and real Slurm (tests/fanout/cluster.sh): a job of 6 idle tasks, 2 per node, each
writing its pid to rank-N when it runs. The recorder's own "watched" map (bpftool) says when
every node records its ranks, so the test kills a rank only once it is watched.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import hs_testlib as hs

sys.path.insert(0, str(hs.source_dir() / "tests" / "fanout"))
from slurm_testlib import SlurmCluster, end_job  # noqa: E402
from test_watch import bpf_ids, ebpf, watchdog_stays_quiet  # noqa: E402,F401  (the fixture skips without eBPF)

WORLD = 6
PER_NODE = 2


@pytest.fixture(scope="module")
def cluster():
    with SlurmCluster() as c:
        yield c


class IdleJob:
    """sbatch -N 3 --ntasks-per-node=2 of sleeping Python tasks (or tasks doing `work`, Python
    lines run with `fifo`, a FIFO of their own, and `rank`); a killed task does not end it."""

    def __init__(self, cluster: SlurmCluster, work: str = "time.sleep(600)\n"):
        self.cluster = cluster
        self.work = work
        self.dir = Path(tempfile.mkdtemp(prefix="hs-watch-job-"))
        self.job_id = ""
        self.pids: dict[int, int] = {}

    def __enter__(self) -> "IdleJob":
        task = ("import os, time\n"
                f"p = '{self.dir}/rank-' + os.environ['SLURM_PROCID']\n"
                "open(p + '.tmp', 'w').write(str(os.getpid()))\n"
                "rank = int(os.environ['SLURM_PROCID'])\n"
                "fifo = p + '.fifo'\n"
                "os.mkfifo(fifo)\n"
                "os.rename(p + '.tmp', p)\n" + self.work)
        (self.dir / "task.py").write_text(task)
        script = self.dir / "job.sh"
        script.write_text(f"#!/bin/sh\nexec srun --kill-on-bad-exit=0 /usr/bin/python3 {self.dir / 'task.py'}\n")
        script.chmod(0o755)
        p = self.cluster.run(["sbatch", "--parsable", "-N", "3", f"--ntasks-per-node={PER_NODE}",
                              "-o", self.dir / "job.out", "-D", self.dir, script])
        self.job_id = p.stdout.strip().split(";")[0]
        hs.wait_for(lambda: all((self.dir / f"rank-{r}").exists() for r in range(WORLD)), 90,
                    f"the {WORLD} tasks of job {self.job_id}")
        self.pids = {r: int((self.dir / f"rank-{r}").read_text()) for r in range(WORLD)}
        return self

    def __exit__(self, *exc) -> None:
        end_job(self.cluster, self.job_id, self.pids.values(), b"task.py")
        shutil.rmtree(self.dir, ignore_errors=True)

    @staticmethod
    def node_of(rank: int) -> str:
        return f"n{rank // PER_NODE + 1}"


def watched_pids() -> set[int]:
    """The pids in every loaded recorder's "watched" map."""
    maps = json.loads(subprocess.run(["bpftool", "map", "show", "--json"], capture_output=True, text=True,
                                     check=True).stdout)
    pids: set[int] = set()
    for m in maps:
        if m.get("name") != "watched":
            continue
        dump = subprocess.run(["bpftool", "map", "dump", "id", str(m["id"]), "--json"], capture_output=True, text=True)
        if dump.returncode == 0:
            pids |= {e["formatted"]["key"] for e in json.loads(dump.stdout) if "formatted" in e}
    return pids


def check_ranks(doc: dict, job: IdleJob, alive: set[int]) -> None:
    assert sorted(n["node"] for n in doc["nodes"]) == ["n1", "n2", "n3"]
    assert doc["unreachable"] == []
    assert all(n["recorder"] == "ebpf" and n["lost"] == 0 for n in doc["nodes"])
    ranks = [(p["rank"], p["node"], p["pid"]) for p in doc["processes"] if p["role"] == "rank"]
    assert ranks == [(r, job.node_of(r), job.pids[r]) for r in sorted(alive)]


def test_watch_for_3_s_reports_every_node_s_ranks(ebpf, cluster):
    with IdleJob(cluster) as job:
        progs0 = bpf_ids("prog")
        run = hs.run_hangscan(["watch", "--slurm-job", job.job_id, "--for", "3", "--json"], env=cluster.env,
                              timeout=90)
        assert run.rc == 0, run.describe()
        doc = json.loads(run.stdout)
        check_ranks(doc, job, set(range(WORLD)))
        assert all(2.9 <= n["window_s"] < 10 for n in doc["nodes"]), doc["nodes"]
        # Idle tasks: each waits in clock_nanosleep (time.sleep) the whole window.
        for p in doc["processes"]:
            assert p["waits"][0]["syscall"] == "clock_nanosleep", p
            assert p["waits"][0]["ongoing"] is True
        # Grouped across the nodes: one group, every rank stuck in the same sleep, no suspect.
        assert [(g["ranks"], g["nodes"]) for g in doc["groups"]] == [(list(range(WORLD)), ["n1", "n2", "n3"])], \
            doc["groups"]
        assert doc["groups"][0]["what"].startswith("stuck in clock_nanosleep() ("), doc["groups"]
        assert doc["suspects"] == [], doc["suspect_reasons"]
        assert doc["timeline"] == []
        text = hs.run_hangscan(["watch", "--slurm-job", job.job_id, "--for", "1"], env=cluster.env, timeout=90)
        assert text.rc == 0, text.describe()
        for r in range(WORLD):
            assert f"rank {r} (pid {job.pids[r]}, python3) on {job.node_of(r)}: on CPU 0% (0 samples)\n" in text.stdout
        hs.wait_for(lambda: not (bpf_ids("prog") - progs0), 20, "the nodes' BPF programs to be freed")


def node_local_watches(job_id: str) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError, PermissionError):
            continue
        # Not srun's own argv, which holds the same words.
        if argv[0].endswith(b"hangscan") and b"--node-local" in argv and job_id.encode() in argv:
            out.append(int(d.name))
    return out


def test_sigkill_of_the_front_end_leaves_no_bpf_program_or_node_watch(ebpf, cluster):
    with IdleJob(cluster) as job:
        progs0 = bpf_ids("prog")
        hsp = subprocess.Popen([hs.hangscan_bin(), "watch", "--slurm-job", job.job_id, "--for", "120"],
                               env=cluster.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
        try:
            hs.wait_for(lambda: set(job.pids.values()) <= watched_pids(), 60, "every node to record its ranks")
            assert len(node_local_watches(job.job_id)) == 3
            os.kill(hsp.pid, signal.SIGKILL)
            hsp.wait(timeout=10)
        finally:
            if hsp.poll() is None:
                os.killpg(hsp.pid, signal.SIGKILL)
                hsp.wait()
        # srun gets SIGTERM when the front end dies (PR_SET_PDEATHSIG) and cancels the step.
        hs.wait_for(lambda: not node_local_watches(job.job_id), 60, "the node-local watches to end")
        hs.wait_for(lambda: not (bpf_ids("prog") - progs0), 20, "the nodes' BPF programs to be freed")
        assert all(Path(f"/proc/{pid}").exists() for pid in job.pids.values())


def test_a_rank_killed_during_the_window_is_in_the_merged_timeline(ebpf, cluster):
    with IdleJob(cluster) as job:
        progs0 = bpf_ids("prog")
        hsp = subprocess.Popen([hs.hangscan_bin(), "watch", "--slurm-job", job.job_id, "--for", "120", "--json"],
                               env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
        try:
            hs.wait_for(lambda: set(job.pids.values()) <= watched_pids(), 60, "every node to record its ranks")
            victim = 3
            os.kill(job.pids[victim], signal.SIGKILL)
            hs.wait_for(lambda: not Path(f"/proc/{job.pids[victim]}").exists(), 10, "the victim to be gone")
            sent = time.monotonic()
            hsp.send_signal(signal.SIGINT)   # ends every node's window; each still reports
            out, err = hsp.communicate(timeout=60)
            ended = time.monotonic()
        finally:
            if hsp.poll() is None:
                os.killpg(hsp.pid, signal.SIGKILL)
                hsp.wait()
        assert hsp.returncode == 0, err.decode()
        assert ended - sent < 30
        doc = json.loads(out)
        check_ranks(doc, job, set(range(WORLD)))
        assert all(n["window_s"] < 60 for n in doc["nodes"]), doc["nodes"]
        victim_proc = next(p for p in doc["processes"] if p["rank"] == victim)
        assert victim_proc["exit"] == "killed by SIGKILL"
        events = [(t["kind"], t["node"], t["pid"], t["rank"]) for t in doc["timeline"]]
        assert events == [("signal", "n2", job.pids[victim], victim), ("exit", "n2", job.pids[victim], victim)]
        sig = doc["timeline"][0]
        assert sig["signal"] == 9 and sig["sender"]["pid"] == os.getpid()
        assert doc["timeline"][0]["t_s"] <= doc["timeline"][1]["t_s"]
        start = min(n["window_start_unix_s"] for n in doc["nodes"])
        assert abs(sig["time_unix_s"] - (start + sig["t_s"])) < 1e-6
        hs.wait_for(lambda: not (bpf_ids("prog") - progs0), 20, "the nodes' BPF programs to be freed")


# A job that stops: every rank waits in read() on its own FIFO that nobody writes, but rank 4
# sleeps (the odd rank). A job that keeps going: every rank burns CPU in Python.
STOPPED = ("if rank == 4:\n    time.sleep(600)\n"
           "fd = os.open(fifo, os.O_RDWR)\nos.read(fd, 1)\n")
GOING = "while True:\n    sum(i * i for i in range(10000))\n"


def bundle_of(stdout: str) -> Path:
    import re
    m = re.search(r"^hangscan: stall: no rank on any node made progress for (\d+) s; capture written to (\S+)$",
                  stdout, re.M)
    assert m, stdout
    assert int(m.group(1)) >= 3
    return Path(m.group(2))


def test_watchdog_across_nodes_fires_on_a_stopped_job_and_names_the_odd_rank(ebpf, cluster, tmp_path):
    with IdleJob(cluster, STOPPED) as job:
        progs0 = bpf_ids("prog")
        run = hs.run_hangscan(["watch", "--slurm-job", job.job_id, "--stall", "3", "--output", tmp_path / "out",
                               "--once"], env=cluster.env, timeout=120)
        assert run.rc == 0, run.describe()
        bundle = bundle_of(run.stdout)
        report = json.loads((bundle / "report.json").read_text())
        # The capture of every node (as `hangscan --slurm-job`): the odd rank is the suspect.
        assert report["suspects"] == [4], report.get("suspect_reasons")
        assert [m["pid"] for m in report["suspect_members"]] == [job.pids[4]]
        assert sorted(p["rank"] for p in report["processes"] if p.get("rank") is not None) == list(range(WORLD))
        assert "stall: no rank on any node made progress" in (bundle / "report.txt").read_text()
        # The recorders' merged view: every node reported, each rank waited since before its window.
        timeline = json.loads((bundle / "timeline.json").read_text())
        check_ranks(timeline, job, set(range(WORLD)))
        for p in timeline["processes"]:
            want = "clock_nanosleep" if p["rank"] == 4 else "read"
            assert p["waits"][0]["syscall"] == want and p["waits"][0]["before_window"], p
        # And their verdict across the nodes, from behaviour: rank 4 is not stuck where the others are.
        assert timeline["suspects"] == [4], timeline["groups"]
        assert [(g["ranks"], g["nodes"]) for g in timeline["groups"]] == \
            [([4], [job.node_of(4)]), ([r for r in range(WORLD) if r != 4], ["n1", "n2", "n3"])], timeline["groups"]
        assert (bundle / "timeline.txt").read_text().count(" on n") >= WORLD
        hs.wait_for(lambda: not node_local_watches(job.job_id), 30, "the node-local watches to end")
        hs.wait_for(lambda: not (bpf_ids("prog") - progs0), 20, "the nodes' BPF programs to be freed")
        assert all(Path(f"/proc/{pid}").exists() for pid in job.pids.values())


def test_watchdog_across_nodes_stays_quiet_on_a_job_that_keeps_going(ebpf, cluster, tmp_path):
    out = tmp_path / "out"
    with IdleJob(cluster, GOING) as job:
        progs0 = bpf_ids("prog")
        watchdog_stays_quiet(["watch", "--slurm-job", job.job_id, "--stall", "3", "--output", out], out,
                             env=cluster.env, recording=lambda: hs.wait_for(
                                 lambda: set(job.pids.values()) <= watched_pids(), 60,
                                 "every node to record its ranks"))
        hs.wait_for(lambda: not node_local_watches(job.job_id), 30, "the node-local watches to end")
        hs.wait_for(lambda: not (bpf_ids("prog") - progs0), 20, "the nodes' BPF programs to be freed")


def test_watchdog_across_nodes_fires_on_a_stale_log_while_the_ranks_run(ebpf, cluster, tmp_path):
    """--log: the ranks keep going but the log stops being written once every node records: the
    front end ends every node's window (SIGUSR1 through srun), each still reports, and the
    bundle says why."""
    import re
    import threading
    log = tmp_path / "train.log"
    log.write_text("step 0\n")
    with IdleJob(cluster, GOING) as job:
        progs0 = bpf_ids("prog")
        hsp = subprocess.Popen([hs.hangscan_bin(), "watch", "--slurm-job", job.job_id, "--stall", "3", "--log",
                                str(log), "--output", str(tmp_path / "out"), "--once"], env=cluster.env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        writing = threading.Event()
        writing.set()

        def write_log():
            while writing.is_set():
                with open(log, "a") as f:
                    f.write("step\n")
                time.sleep(0.5)

        writer = threading.Thread(target=write_log)
        writer.start()
        try:
            hs.wait_for(lambda: set(job.pids.values()) <= watched_pids(), 60, "every node to record its ranks")
            time.sleep(1)
            writing.clear()  # the training "hangs" its log; its ranks still burn CPU
            out, err = hsp.communicate(timeout=90)
        finally:
            writing.clear()
            writer.join()
            if hsp.poll() is None:
                os.killpg(hsp.pid, signal.SIGKILL)
                hsp.wait()
        assert hsp.returncode == 0, err.decode()
        m = re.search(rf"^hangscan: stall: {re.escape(str(log))} was not written for (\d+) s; capture written to (\S+)$",
                      out.decode(), re.M)
        assert m and int(m.group(1)) >= 3, (out, err)
        bundle = Path(m.group(2))
        assert (bundle / "report.txt").read_text().startswith(f"stall: {log} was not written for ")
        timeline = json.loads((bundle / "timeline.json").read_text())
        check_ranks(timeline, job, set(range(WORLD)))
        # Ended by the front end, not by a node's own verdict: the ranks were sampled on CPU.
        assert all(p["samples"] > 0 for p in timeline["processes"]), timeline["processes"]
        report = json.loads((bundle / "report.json").read_text())
        assert sorted(p["rank"] for p in report["processes"] if p.get("rank") is not None) == list(range(WORLD))
        hs.wait_for(lambda: not node_local_watches(job.job_id), 30, "the node-local watches to end")
        hs.wait_for(lambda: not (bpf_ids("prog") - progs0), 20, "the nodes' BPF programs to be freed")


def test_watch_slurm_job_html_page_embeds_the_merged_json_of_the_same_run(ebpf, cluster, tmp_path):
    """`watch --slurm-job ID --json --html FILE`: the page of the merged window, whose embedded
    data is the JSON printed by the same run: every node's ranks and the odd rank 4."""
    from test_watch_formats import page_document
    with IdleJob(cluster, STOPPED) as job:
        progs0 = bpf_ids("prog")
        page_file = tmp_path / "job.html"
        run = hs.run_hangscan(["watch", "--slurm-job", job.job_id, "--for", "3", "--json", "--html",
                               page_file], env=cluster.env, timeout=90)
        assert run.rc == 0, run.describe()
        check_ranks(run.doc, job, set(range(WORLD)))
        assert run.doc["suspects"] == [4], run.doc["groups"]
        page = page_document(page_file.read_text())
        assert page == run.doc
        assert [(p["rank"], p["node"], p["pid"]) for p in page["processes"]] == \
            [(r, job.node_of(r), job.pids[r]) for r in range(WORLD)]
        merged_page_draws_each_node_on_one_axis(run.doc, page_file, tmp_path)
        hs.wait_for(lambda: not (bpf_ids("prog") - progs0), 20, "the nodes' BPF programs to be freed")


def merged_page_draws_each_node_on_one_axis(doc, page_file, tmp_path):
    """In the browser: the merged window is as long as the last node's window ends (the merged
    document has no window_s of its own), and each process's on-CPU bars start at its node's
    offset on that axis, a bucket of its node's width each."""
    import browser
    try:
        browser.chromium()
    except pytest.skip.Exception:
        return  # the JSON checks above stand; the browser part runs where chromium is
    nodes = {n["node"]: n for n in doc["nodes"]}
    window = max(n["offset_s"] + n["window_s"] for n in nodes.values())
    with browser.Browser(tmp_path) as b:
        page = b.open(page_file.as_uri())
        assert page.eval("document.title") == \
            f"hangscan watch: {len(doc['processes'])} processes, {window:.1f} s"
        lefts = page.eval("[...document.querySelectorAll('.strip-row')].map(r => [+r.dataset.pid,"
                          " [...r.querySelectorAll('.cpu-strip .cpu')].map(b => parseFloat(b.style.left))])")
        expected = []
        for p in doc["processes"]:
            n = nodes[p["node"]]
            expected.append([p["pid"], [pytest.approx((n["offset_s"] + i * n["cpu_bucket_s"]) / window * 100,
                                                      abs=0.0006) for i in range(len(p["cpu_over_time"]))]])
        assert lefts == expected
        assert all(n["cpu_bucket_s"] > 0 for n in nodes.values()), doc["nodes"]
    assert b.console_errors == []
