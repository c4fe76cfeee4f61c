#!/usr/bin/env python3
"""The floor under the recorder's scheduler programs, on this machine, under the bench job.

Why: `on_sched_switch` and `on_sched_wakeup` run for every context switch and wake-up of the
machine, watched or not; their cost is a floor under `hangscan watch`'s share of a job's CPU
(issue "hangscan watch", goal < 1%). This says how much of it is the kernel's own and how much
each thing the programs must do costs: with the 8-rank torch gloo job of bench_watch.py
running, it attaches in turn (hs_bpf_floor, tests/bench/bpf_floor.bpf.c) programs that do
nothing, one task-storage lookup that finds nothing, and one read of the clock
(bpf_ktime_get_ns), each to both tracepoints for SECONDS, and prints runs/s and ns a run
(kernel.bpf_stats_enabled=1 for the run, put back after; the accounting's own clock reads are
in the numbers, as they are in bench_watch.py's BPF time).

usage: /usr/bin/python3 tests/bench/bpf_floor.py [--build build] [--seconds 20] [--world 8]
Every process it starts is stopped at the end (by pid).
"""

import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_watch as bw  # noqa: E402

VARIANTS = ("empty", "lookup", "clock")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--world", type=int, default=8)
    args = ap.parse_args()
    loader = os.path.join(args.build, "tests", "bench", "hs_bpf_floor")
    obj = os.path.join(args.build, "bpf", "bpf_floor.bpf.o")
    if not (os.path.exists(loader) and os.path.exists(obj)):
        raise SystemExit(f"{loader} or {obj} is missing: build with eBPF support (clang, bpftool, libbpf-dev)")
    rows = []
    with bw.stepping_job(args.world, "hs-floor-steps-") as (job, counter, ranks):
        for variant in VARIANTS:
            c0 = bw.cpu_s(ranks)
            out = subprocess.run([loader, obj, variant, str(args.seconds)], capture_output=True,
                                 text=True, timeout=args.seconds + 60)
            job_cpu = bw.cpu_s(ranks) - c0
            if out.returncode != 0:
                raise SystemExit(out.stderr.strip())
            for line in out.stdout.splitlines():
                name, runs, ns = line.split()
                rows.append((name, int(runs) / args.seconds, int(ns) / max(int(runs), 1),
                             100 * int(ns) / 1e9 / job_cpu))
    print(f"{args.world} ranks, torch gloo, {os.cpu_count()} CPUs, {args.seconds} s a variant, load average "
          f"at the end {' '.join(open('/proc/loadavg').read().split()[:3])}\n")
    print(f"{'program':<16} {'runs/s':>9} {'ns/run':>8} {'% of job CPU':>13}")
    for name, rate, ns, share in rows:
        print(f"{name:<16} {rate:9.0f} {ns:8.1f} {share:12.3f}%")


if __name__ == "__main__":
    main()
