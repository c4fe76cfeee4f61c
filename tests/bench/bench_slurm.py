#!/usr/bin/env python3
"""End-to-end time of `hangscan --slurm-job ID` on the 3-node test cluster.

Why: the multi-node mode adds srun start-up, one agent per node and the merge to the
single-node capture; this measures the whole command as an operator runs it, from a login
shell and from inside the allocation, on a 6-rank Python job (2 ranks per node), plus the
recovery path where one node's slurmd is gone. Numbers go into docs/performance.md
("Multi-node").

usage: HANGSCAN_BIN=build/hangscan tests/bench/bench_slurm.py [--runs N] [--scale 3,16,32]
--scale: instead, one cluster per node count (slurmd daemons on this host), a ring job of two
ranks per node, and the end-to-end time of `hangscan --slurm-job ID --json` at each size (issue
"10,000 nodes": the time should grow less than 2x from 3 to 32 nodes). With HANGSCAN_BASE_BIN set
(an older build), that binary is timed too, alternated with the new one on the same cluster and job.
The cluster and the job are always stopped at the end (by pid).
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "fanout"))
from slurm_testlib import RingJob, SlurmCluster  # noqa: E402


def timed(argv, env, expect_rc):
    start = time.monotonic()
    p = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    took = time.monotonic() - start
    if p.returncode != expect_rc:
        raise RuntimeError(f"{argv} -> {p.returncode}\n{p.stderr[-2000:]}")
    return took


def report(name, samples):
    print(f"{name:<46} runs {len(samples):>2}  min {min(samples):6.3f} s  median "
          f"{statistics.median(samples):6.3f} s  max {max(samples):6.3f} s")


def scale(hs, sizes, runs, base=None):
    """One row per cluster size: the whole `--slurm-job` command from the login node."""
    print("srun true: `srun --overlap -N N true` on the same job, Slurm's own launch cost (every\n"
          "slurmd and slurmstepd of the cluster shares this host's CPUs)\n")
    extra = f"  {'base median s':>13} {'base min s':>10}" if base else ""
    print(f"{'nodes':>5} {'ranks':>5}  {'min s':>7} {'median s':>8} {'max s':>7}  {'srun true s':>11}{extra}")
    for n in sizes:
        with SlurmCluster(nodes=n) as cluster, RingJob(cluster, nodes=n, per_node=2, odd=3) as job:
            login = [hs, "--slurm-job", job.job_id, "--json"]
            srun = ["srun", f"--jobid={job.job_id}", "--overlap", f"-N{n}", f"-n{n}",
                    "--ntasks-per-node=1", "true"]
            t, s, b = [], [], []
            for _ in range(runs):  # alternated, so load drift affects all alike
                t.append(timed(login, cluster.env, 0))
                s.append(timed(srun, cluster.env, 0))
                if base:
                    b.append(timed([base] + login[1:], cluster.env, 0))
            extra = f"  {statistics.median(b):13.3f} {min(b):10.3f}" if base else ""
            print(f"{n:>5} {job.world:>5}  {min(t):7.3f} {statistics.median(t):8.3f} {max(t):7.3f}"
                  f"  {statistics.median(s):11.3f}{extra}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--scale", help="comma-separated node counts, e.g. 3,16,32")
    args = ap.parse_args()
    hs = os.environ.get("HANGSCAN_BIN") or str(HERE.parents[1] / "build" / "hangscan")
    if args.scale:
        scale(hs, [int(n) for n in args.scale.split(",")], args.runs,
              os.environ.get("HANGSCAN_BASE_BIN"))
        return
    with SlurmCluster() as cluster, RingJob(cluster, nodes=3, per_node=2, odd=3) as job:
        env = cluster.env
        login = [hs, "--slurm-job", job.job_id, "--json"]
        report("login node, --json (6 ranks, 3 nodes)", [timed(login, env, 0) for _ in range(args.runs)])
        report("login node, text", [timed(login[:-1], env, 0) for _ in range(args.runs)])
        inside = ["srun", f"--jobid={job.job_id}", "--overlap", "-N1", "-n1", "-w", "n1"] + login
        report("inside the allocation (srun --overlap)", [timed(inside, env, 0) for _ in range(args.runs)])
        squeue = ["squeue", "-h", "-j", job.job_id]
        report("for scale: one squeue call", [timed(squeue, env, 0) for _ in range(args.runs)])
        srun = ["srun", f"--jobid={job.job_id}", "--overlap", "-N3", "-n3", "--ntasks-per-node=1", "true"]
        report("for scale: srun --overlap -N3 true", [timed(srun, env, 0) for _ in range(args.runs)])
        os.kill(cluster.pid_of("slurmd-n3"), 15)
        time.sleep(1)
        report("slurmd of n3 stopped (exit 1, n3 unreachable)",
               [timed(login + ["--timeout", "30"], env, 1) for _ in range(min(3, args.runs))])


if __name__ == "__main__":
    main()
