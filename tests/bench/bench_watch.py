#!/usr/bin/env python3
"""The recorder's overhead: a busy 8-rank torch gloo job, with and without `hangscan watch`.

Why: `watch` is meant to run beside a training job for hours (issue "hangscan watch"): the job
must not slow down (goal: the recorder's CPU < 1% of the job's), and the ring buffer must keep
up (lost records counted). Measured side by side in one run: the job runs throughout; windows
without and with `watch --pid RANK... --for W` (default rate) alternate, so load drift from
other work on the machine affects both alike.

Per window: the job's steps/s (rank 0 writes its step count to a file every step), the job's
CPU time (utime+stime of the ranks, /proc/PID/stat), and with `watch`: hangscan's own CPU time
(its rusage, user+sys) and the kernel time of the recorder's BPF programs (run_time_ns, from
`bpftool prog show` with kernel.bpf_stats_enabled=1 for the run, restored at the end; that
time is spent in the job's threads, so it is counted in both). Then a stress window
(--rate 999 --wait-ms 1): events per second and lost records.

With --before BIN (another hangscan, e.g. main's build in build-before/), each round is three
windows: without, with BIN ("before") and with HANGSCAN_BIN ("with watch"), so a change is
measured side by side in one run. The recorder's sleepable iterator runs in hangscan's own
context: its BPF time is in `watch CPU s` already and is left out of `BPF s` (shown as `iter s`).
`ms/step`: the job's CPU per step (what a hook costs the job beyond its programs' own run
time shows there, e.g. the slow system call path a raw_syscalls program forces).

usage: HANGSCAN_BIN=build/hangscan /usr/bin/python3 tests/bench/bench_watch.py [--window 10]
       [--pairs 3] [--world 8] [--before BIN] [--no-stress] [--warm SECONDS]
Every process it starts is stopped at the end (by pid).
"""

import argparse
import contextlib
import datetime
import json
import os
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HZ = os.sysconf("SC_CLK_TCK")


def rank_main(rank, world, init_method, counter):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=600))
    a = torch.randn(96, 96)
    grad = torch.zeros(4096)
    fd = os.open(counter, os.O_WRONLY) if rank == 0 else -1
    step = 0
    while True:  # a training step: some compute, then an all-reduce of the "gradients"
        for _ in range(8):
            a = torch.tanh(a @ a.T / 96)
        grad += a[0, 0]
        dist.all_reduce(grad)
        step += 1
        if fd >= 0:
            os.pwrite(fd, struct.pack("Q", step), 0)


def job_main(world, counter):
    import torch.multiprocessing as mp
    init = "file://" + tempfile.mktemp(prefix="hs-bench-gloo-")
    mp.spawn(rank_main, args=(world, init, counter), nprocs=world, join=True)


def steps(counter):
    with open(counter, "rb") as f:
        data = f.read(8)
    return struct.unpack("Q", data)[0] if len(data) == 8 else 0


def cpu_s(pids):
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / HZ


def ranks_of(launcher):
    out = subprocess.run(["pgrep", "-P", str(launcher)], capture_output=True, text=True).stdout.split()
    pids = [int(p) for p in out]
    # spawn's children: the ranks (and its resource tracker, which has no torch loaded: little CPU)
    return [p for p in pids if "spawn_main" in open(f"/proc/{p}/cmdline").read()]


ITERATOR = "copy_wait_stacks"  # runs in hangscan's context (its CPU time holds it)


def bpf_run_ns(owner, iterator=False):
    """Kernel time of the BPF programs process `owner` holds (their ids from its fds' fdinfo:
    another agent's recorder on this machine is not ours): the iterator's alone with `iterator`,
    else all the others."""
    ids = set()
    try:
        for fd in os.listdir(f"/proc/{owner}/fdinfo"):
            try:
                for line in open(f"/proc/{owner}/fdinfo/{fd}"):
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
            except OSError:
                pass
    except OSError:
        return 0
    out = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True).stdout
    return sum(p.get("run_time_ns", 0) for p in json.loads(out or "[]")
               if p.get("id") in ids and (p.get("name") == ITERATOR) == iterator)


def proc_cpu_s(pid):
    return cpu_s([pid])



@contextlib.contextmanager
def stepping_job(world, prefix="hs-bench-steps-"):
    """The bench job, stepping, with kernel.bpf_stats_enabled=1: yields (job, counter, ranks).
    At the end the setting is put back, the job killed (its process group) and the counter gone."""
    counter = tempfile.mktemp(prefix=prefix)
    open(counter, "wb").close()
    stats_before = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
    job = subprocess.Popen([sys.executable, __file__, "--job", str(world), counter],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        deadline = time.monotonic() + 120
        while steps(counter) < 20:
            if time.monotonic() > deadline or job.poll() is not None:
                raise SystemExit("the job did not start stepping")
            time.sleep(0.5)
        ranks = ranks_of(job.pid)
        assert len(ranks) == world, ranks
        yield job, counter, ranks
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(stats_before)
        os.killpg(job.pid, 9)
        job.wait()
        os.unlink(counter)

def window(counter, ranks, seconds, watch_argv=None, warm=0.0):
    """One window: steps/s and CPU over `seconds` - 1.5 s of steady state (with `watch`: from its
    'recording' line, so its start-up and final report are apart: `startup_cpu_s`, `total_cpu_s`).
    With `warm` > 0 the same is also measured from `warm` s into the window to its end
    (`late_*`): the recorder's cost once its one-time work (each module's DWARF and symbol
    index, built at the first batch that meets it) is done, as in a watch that runs for hours."""
    row = {}
    p = None
    if watch_argv is not None:
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.Popen(watch_argv + ["--for", str(seconds), "--json"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        line = p.stderr.readline().decode()
        assert line.startswith("hangscan: recording"), line
        row["startup_cpu_s"] = proc_cpu_s(p.pid)
    owner = p.pid if p else -1
    s0, c0, b0, t0 = steps(counter), cpu_s(ranks), bpf_run_ns(owner), time.monotonic()
    i0 = bpf_run_ns(owner, iterator=True)
    h0 = proc_cpu_s(p.pid) if p else 0
    late0 = None
    if 0 < warm < seconds - 1.5:
        time.sleep(warm)
        late0 = (cpu_s(ranks), bpf_run_ns(owner), proc_cpu_s(p.pid) if p else 0, time.monotonic())
    time.sleep(seconds - 1.5 - (warm if late0 else 0))
    s1, c1, b1, t1 = steps(counter), cpu_s(ranks), bpf_run_ns(owner), time.monotonic()
    i1 = bpf_run_ns(owner, iterator=True)
    h1 = proc_cpu_s(p.pid) if p else 0
    row.update(steps_per_s=(s1 - s0) / (t1 - t0), job_cpu_s=c1 - c0, bpf_s=(b1 - b0) / 1e9,
               iter_s=(i1 - i0) / 1e9, wall_s=t1 - t0,
               ms_per_step=1000 * (c1 - c0) / max(s1 - s0, 1))
    if late0:
        row.update(late_job_cpu_s=c1 - late0[0], late_bpf_s=(b1 - late0[1]) / 1e9,
                   late_hangscan_cpu_s=h1 - late0[2], late_wall_s=t1 - late0[3])
    if p is not None:
        out, _ = p.communicate(timeout=seconds + 120)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)  # hangscan alone was reaped between
        doc = json.loads(out)
        row.update(events=doc["events"], lost=doc["lost"], window_s=doc["window_s"],
                   hangscan_cpu_s=h1 - h0,
                   total_cpu_s=(r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--window", type=float, default=10)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--world", type=int, default=8)
    ap.add_argument("--before", help="a second hangscan binary, watched in windows of its own")
    ap.add_argument("--no-stress", action="store_true", help="leave out the stress window")
    ap.add_argument("--warm", type=float, default=0,
                    help="also measure each watched window from this many seconds in (steady state)")
    ap.add_argument("--job", nargs=2, help=argparse.SUPPRESS)  # internal: WORLD COUNTER
    args = ap.parse_args()
    if args.job:
        return job_main(int(args.job[0]), args.job[1])
    hs = os.environ.get("HANGSCAN_BIN", "build/hangscan")
    with stepping_job(args.world) as (job, counter, ranks):
        pids = sum((["--pid", str(p)] for p in ranks), [])
        watch = [hs, "watch"] + pids
        rows = []
        for _ in range(args.pairs):
            rows.append(("without", window(counter, ranks, args.window)))
            if args.before:
                rows.append(("before", window(counter, ranks, args.window, [args.before, "watch"] + pids, args.warm)))
            rows.append(("with watch", window(counter, ranks, args.window, watch, args.warm)))
        if not args.no_stress:
            rows.append(("stress", window(counter, ranks, args.window,
                                          watch + ["--rate", "999", "--wait-ms", "1"])))
        load = open("/proc/loadavg").read().split()[:3]
    print(f"{args.world} ranks, torch gloo, {os.cpu_count()} CPUs, windows of {args.window:.0f} s "
          f"(steady state: {args.window - 1.5:.1f} s from watch's 'recording' line), load average "
          f"at the end {' '.join(load)}\n")
    print(f"{'window':<11} {'steps/s':>8} {'job CPU s':>9} {'ms/step':>7} {'watch CPU s':>11} {'BPF s':>7} "
          f"{'iter s':>6} {'recorder %':>10} {'events/s':>9} {'lost':>6} {'startup s':>9} {'total s':>8}")
    for name, r in rows:
        if "events" in r:
            share = 100 * (r["hangscan_cpu_s"] + r["bpf_s"]) / r["job_cpu_s"]
            extra = (f"{r['hangscan_cpu_s']:11.3f} {r['bpf_s']:7.3f} {r['iter_s']:6.3f} {share:9.2f}% "
                     f"{r['events'] / r['window_s']:9.0f} {r['lost']:6d} {r['startup_cpu_s']:9.2f} "
                     f"{r['total_cpu_s']:8.2f}")
        else:
            extra = f"{'':>11} {r['bpf_s']:7.3f}"
        print(f"{name:<11} {r['steps_per_s']:8.2f} {r['job_cpu_s']:9.2f} {r['ms_per_step']:7.1f} {extra}")
    without = [r for n, r in rows if n == "without"]
    for label in (["before"] if args.before else []) + ["with watch"]:
        with_ = [r for n, r in rows if n == label]
        med = lambda rs, k: statistics.median([r[k] for r in rs])
        shares = [100 * (r["hangscan_cpu_s"] + r["bpf_s"]) / r["job_cpu_s"] for r in with_]
        print(f"\n{label}: median steps/s {med(with_, 'steps_per_s'):.2f} against {med(without, 'steps_per_s'):.2f} "
              f"without ({100 * (med(with_, 'steps_per_s') / med(without, 'steps_per_s') - 1):+.1f}%); job CPU "
              f"{med(with_, 'ms_per_step'):.1f} ms/step against {med(without, 'ms_per_step'):.1f}; "
              f"median recorder share {statistics.median(shares):.2f}% of the job's CPU (goal < 1%)")
        late = [r for r in with_ if "late_job_cpu_s" in r]
        if late:
            parts = [f"{100 * r['late_hangscan_cpu_s'] / r['late_job_cpu_s']:.2f}% + "
                     f"{100 * r['late_bpf_s'] / r['late_job_cpu_s']:.2f}%" for r in late]
            shares = [100 * (r["late_hangscan_cpu_s"] + r["late_bpf_s"]) / r["late_job_cpu_s"] for r in late]
            print(f"{label}, from {args.warm:.0f} s in ({late[0]['late_wall_s']:.1f} s): recorder share "
                  f"(hangscan + BPF) {', '.join(parts)}; median {statistics.median(shares):.2f}%")


if __name__ == "__main__":
    main()
