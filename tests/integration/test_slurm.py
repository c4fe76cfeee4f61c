"""`hangscan --slurm-job ID` on a real 3-node Slurm 22.05 cluster (tests/fanout/cluster.sh).

A 6-rank ring all-reduce runs as a Slurm job over n1..n3 (2 ranks per node); rank 3 (on n2)
waits for a checkpoint instead of joining. hangscan must name exactly rank 3 and node n2, from
a login shell and from inside the allocation (srun --overlap), write per-node files, and
report a node whose slurmd is gone as unreachable while reporting the others (exit 1).
With --gcore it writes exactly two cores on their own nodes (rank 0 for the majority, rank 3),
which `hangscan core` reads as the live report did, and the ranks run on; an agent asked for
pids that are not (or no longer) the job's on its node refuses each with a reason. The agents
copy the sleeping ranks through BPF without a stop, as `dump` does (its test takes
/tmp/hs-bpf.lock), and `--no-bpf` reaches them.
The cluster is started once for the module and always stopped (every daemon by pid).
"""

import fcntl
import json
import os
import re
import stat
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


def start_ticks(pid):
    """Field 22 of /proc/PID/stat: when the process started, in clock ticks after boot."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def check_ring_report(doc, job):
    assert doc["job_id"] == job.job_id
    ranks = sorted(p["rank"] for p in doc["processes"] if p["role"] == "rank")
    assert ranks == list(range(WORLD)), [(p["pid"], p["rank"], p["role"], p["cmdline"]) for p in doc["processes"]]
    for p in doc["processes"]:
        if p["role"] == "rank":
            assert p["host"] == job.node_of(p["rank"]), p
            assert p["pid"] == job.pids[p["rank"]]
            # Carried from the node's agent: the start time the core round checks.
            assert p["start_ticks"] == start_ticks(p["pid"]), p
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
        assert names == ["n1.txt", "n2.txt", "n3.txt", "report.html", "report.json", "report.txt"], names
        n2 = Path(out, "n2.txt").read_text()
        assert "wait_for_checkpoint" in n2, n2
        assert "wait_for_checkpoint" not in Path(out, "n1.txt").read_text()
        assert json.loads(Path(out, "report.json").read_text())["suspects"] == [ODD]
        assert "rank 3" in Path(out, "report.txt").read_text()


def test_html_page_of_the_job_in_a_browser(cluster, job, tmp_path):
    """--html FILE beside the text: the 3-node job's page in headless Chromium (browser.py)."""
    browser = pytest.importorskip("browser")
    browser.chromium()
    page_file = tmp_path / "job.html"
    run = slurm_hangscan(cluster, "--slurm-job", job.job_id, "--timeout", "60", "--html", page_file)
    assert run.rc == 0, run.describe()
    assert run.stdout.splitlines()[1].startswith("SUSPECT rank 3 "), run.stdout[:300]
    odd_line = hs.hs_line("ring_allreduce.py", "odd")
    with browser.Browser(tmp_path) as b:
        page = b.open(page_file.as_uri())
        verdict = page.eval("document.getElementById('verdict').innerText")
        assert "SUSPECT rank 3" in verdict and "n2" in verdict, verdict
        assert page.eval("[...document.querySelectorAll('#tree .node.suspect-path .ranks')]"
                         ".filter(e => e.offsetParent !== null).map(e => e.textContent)")[-1] == "[3]"
        page.eval("document.querySelector('#verdict button.member').click()")
        shown = page.eval("document.getElementById('page').innerText").splitlines()
        assert shown[0] == f"rank 3 (pid {job.pids[ODD]}, n2)", shown
        assert f"wait_for_checkpoint (ring_allreduce.py:{odd_line})" in shown, shown
        page.eval("const s = document.getElementById('search'); s.value = 'rank 5';"
                  "s.dispatchEvent(new Event('input'))")
        rows = page.eval("[...document.querySelectorAll('#processes tr.proc td')]"
                         ".map(e => e.textContent)")
        assert rows[:3] == ["rank 5", str(job.pids[5]), job.node_of(5)], rows
    assert set(b.requests) <= {page_file.as_uri()}, b.requests
    assert b.console_errors == []


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


CORE_LINE = re.compile(r"^hangscan: core of rank (\d+) on (n\d) \(pid (\d+), (suspect|representative)\): "
                       r"(\S+) \((\d+(?:\.\d)?[KMGTP]?), paused (\d+\.\d) ms\)$")


def main_python_frames(proc):
    main = hs.thread_by_tid(proc, proc["pid"])
    return [(f["function"], f["file"], f["line"]) for f in main["frames"] if f["kind"] == "python"]


def test_gcore_writes_one_core_per_group_on_its_own_node(cluster, job):
    with tempfile.TemporaryDirectory(prefix="hs-slurm-gcore-") as d:
        run = slurm_hangscan(cluster, "--slurm-job", job.job_id, "--json", "--gcore", "--gcore-dir", d,
                             "--timeout", "60")
        assert run.rc == 0, run.describe()
        check_ring_report(run.doc, job)
        p0, p3 = job.pids[0], job.pids[ODD]
        names = sorted(os.listdir(d))
        assert names == [f"core.n1.rank0.{p0}", f"core.n2.rank3.{p3}"], (names, run.stderr)
        for n in names:
            assert stat.S_IMODE(os.stat(os.path.join(d, n)).st_mode) == 0o600, n
        lines = [CORE_LINE.match(l) for l in run.stderr.splitlines() if l.startswith("hangscan: core of")]
        assert all(lines), run.stderr
        got = [(int(m[1]), m[2], int(m[3]), m[4], m[5]) for m in lines]
        assert got == [(0, "n1", p0, "representative", f"{d}/core.n1.rank0.{p0}"),
                       (ODD, "n2", p3, "suspect", f"{d}/core.n2.rank3.{p3}")], run.stderr
        assert f"hangscan: 2 of 2 cores written in {d} on 2 node(s)" in run.stderr, run.stderr

        rep = hs.run_hangscan(["core", "--json"] + [os.path.join(d, n) for n in names], timeout=300)
        assert rep.rc in (0, 1), rep.describe()
        core_procs = {p["rank"]: p for p in rep.doc["processes"]}
        assert sorted(core_procs) == [0, ODD]
        # Two cores of a 6-rank job cannot elect a majority: each stands alone, ranks 1,2,4,5
        # are missing there. What must hold: each core's stack is its rank's live stack, and
        # the odd rank is where the live report said, on the same line.
        assert sorted(sorted(g["ranks"]) for g in rep.doc["groups"]) == [[0], [ODD]]
        assert rep.doc["missing_ranks"] == [1, 2, 4, 5]
        live = {p["rank"]: p for p in run.doc["processes"] if p["role"] == "rank"}
        for rank in (0, ODD):
            assert core_procs[rank]["pid"] == live[rank]["pid"]
            assert main_python_frames(core_procs[rank]) == main_python_frames(live[rank]), rank
        odd_funcs = [(f, line) for f, _, line in main_python_frames(core_procs[ODD])]
        assert ("wait_for_checkpoint", hs.hs_line("ring_allreduce.py", "odd")) in odd_funcs, odd_funcs
        zero_funcs = [(f, line) for f, _, line in main_python_frames(core_procs[0])]
        assert ("all_reduce", hs.hs_line("ring_allreduce.py", "recv")) in zero_funcs, zero_funcs

    # The ranks run on: not stopped, not traced, and the job still looks the same.
    for pid in job.pids.values():
        hs.assert_runs_on(pid)
    assert cluster.job_state(job.job_id) == "RUNNING"
    again = slurm_hangscan(cluster, "--slurm-job", job.job_id, "--json", "--timeout", "60")
    assert again.rc == 0, again.describe()
    check_ring_report(again.doc, job)


def test_gcore_suspects_only_and_a_core_that_cannot_be_written(cluster, job):
    with tempfile.TemporaryDirectory(prefix="hs-slurm-gcore-") as d:
        p0, p3 = job.pids[0], job.pids[ODD]
        # A core already there is never overwritten: that core fails, the other is written.
        taken = Path(d, f"core.n2.rank3.{p3}")
        taken.write_text("not ours\n")
        run = slurm_hangscan(cluster, "--slurm-job", job.job_id, "--gcore", "--gcore-dir", d, "--timeout", "60")
        assert run.rc == 1, run.describe()
        assert sorted(os.listdir(d)) == [f"core.n1.rank0.{p0}", f"core.n2.rank3.{p3}"]
        assert taken.read_text() == "not ours\n"
        assert (f"hangscan: no core of rank 3 on n2 (pid {p3}, suspect): cannot create {d}/core.n2.rank3.{p3}: "
                f"File exists\nhint: a core of this process is already there; move it away or choose another "
                f"--gcore-dir\n") in run.stderr, run.stderr
        assert f"hangscan: 1 of 2 cores written in {d} on 2 node(s)" in run.stderr, run.stderr
        assert "rank 3" in run.stdout   # the report itself is complete

    with tempfile.TemporaryDirectory(prefix="hs-slurm-gcore-") as d:
        run = slurm_hangscan(cluster, "--slurm-job", job.job_id, "--gcore", "suspects", "--gcore-dir", d,
                             "--timeout", "60", "-v")
        assert run.rc == 0, run.describe()
        assert os.listdir(d) == [f"core.n2.rank3.{p3}"]
        # The core round ran on n2 alone.
        assert re.search(r"hangscan: cores: round 1: srun .*-w n2 ", run.stderr), run.stderr


def test_gcore_usage_errors(cluster, job):
    run = slurm_hangscan(cluster, "--slurm-job", job.job_id, "--gcore", "--gcore-max-size", "lots")
    assert run.rc == 64, run.describe()
    assert "hangscan: --gcore-max-size lots: not a size" in run.stderr
    run = slurm_hangscan(cluster, "--gcore", "--gcore-dir", "/tmp")
    assert run.rc == 64, run.describe()
    assert "needs --slurm-job ID" in run.stderr


def test_agent_refuses_pids_that_are_not_the_jobs_on_its_node(cluster, job):
    # The agent's end of the core round, run directly: every "node" shares this machine, so
    # rank 0 (on n1) is visible from n2's agent and must still be refused there.
    gone = subprocess.Popen(["/bin/true"])
    gone.wait()
    p0, p3 = job.pids[0], job.pids[ODD]
    p3_start = start_ticks(p3)
    with tempfile.TemporaryDirectory(prefix="hs-slurm-agent-") as d:
        run = hs.run_hangscan(
            ["agent", "--slurm-job", job.job_id, "--node", "n2", "--raw", "--gcore-dir", d,
             "--write-core", f"n2:{p0}:0", "--write-core", f"n2:{p3}:2", "--write-core", f"n2:{p3}:3@1",
             "--write-core", f"n2:{os.getpid()}",
             "--write-core", f"n2:{gone.pid}:3", "--write-core", f"n1:{p0}:0"],
            env=cluster.env, parse_json=False)
        assert run.rc == 0, run.describe()
        doc = json.loads(run.stdout)
        assert doc["schema"] == "hangscan-cores/1"
        assert [(c["pid"], c["rank"], c["error"]) for c in doc["cores"]] == [
            (p0, 0, f"pid {p0} is no longer a process of Slurm job {job.job_id} on node n2: not dumped "
                    "(the pid was reused?)"),
            (p3, 2, f"pid {p3} is rank 3 now, not rank 2: not dumped (the pid was reused?)"),
            (p3, 3, f"pid {p3} is another process now (started at tick {p3_start}, the captured one at tick 1): "
                    "not dumped (the pid was reused)"),
            (os.getpid(), None, f"pid {os.getpid()} is no longer a process of Slurm job {job.job_id} on node n2: "
                                "not dumped (the pid was reused?)"),
            (gone.pid, 3, f"pid {gone.pid} is gone: it exited after the capture"),
        ], doc
        assert os.listdir(d) == []
    hs.assert_runs_on(p0)
    hs.assert_runs_on(p3)


def untouched(pids):
    """{tid: (context-switch lines, /proc/TID/syscall)} of every thread of `pids`: what a stop
    moves (PTRACE_INTERRUPT restarts the call and counts two switches)."""
    out = {}
    for pid in pids:
        for tid in hs.tids(pid):
            status = hs.read_text(f"/proc/{pid}/task/{tid}/status") or ""
            out[tid] = ([line for line in status.splitlines() if "ctxt_switches" in line],
                        hs.read_text(f"/proc/{pid}/task/{tid}/syscall"))
    return out


def rank_captures(run):
    """{rank: (pause_us, {capture of each thread})} of a --slurm-job --json run."""
    assert run.rc == 0, run.describe()
    return {p["rank"]: (p["pause_us"], {t["capture"] for t in p["threads"]})
            for p in run.doc["processes"] if p["role"] == "rank"}


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/sys/kernel/btf/vmlinux") or
                    not os.path.exists(os.path.join(hs.build_dir(), "bpf", "snapshot.lskel.h")),
                    reason="the quiet path needs root, BTF and a build with eBPF")
def test_agents_copy_blocked_ranks_without_a_stop(cluster, job):
    # Every rank's threads sleep (recv, time.sleep): the agents copy them through BPF, as dump
    # does, so across two cluster dumps nothing of theirs moves; --no-bpf reaches the agents.
    env = {k: v for k, v in cluster.env.items() if k != "HANGSCAN_NO_BPF"}
    quiet = {rank: (0, {"bpf"}) for rank in range(WORLD)}
    with open("/tmp/hs-bpf.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the agents load BPF
        before = untouched(job.pids.values())
        for _ in range(2):
            run = hs.run_hangscan(["--slurm-job", job.job_id, "--json", "--timeout", "60"], env=env)
            assert rank_captures(run) == quiet
        assert untouched(job.pids.values()) == before
        run = hs.run_hangscan(["--slurm-job", job.job_id, "--json", "--timeout", "60", "--no-bpf"],
                              env=env)
        stopped = rank_captures(run)
    assert sorted(stopped) == list(range(WORLD))
    assert all(pause > 0 and captures == {"ptrace"} for pause, captures in stopped.values()), stopped
    assert untouched(job.pids.values()) != before


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
