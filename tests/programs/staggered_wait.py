"""Ranks that block in the same call at known moments: the target of hangscan's timing tests.

Usage: python staggered_wait.py READY --world N --late R --delay S --times FILE [--rss-mb M]

A launcher starts N ranks (subprocesses with RANK/WORLD_SIZE in their environment, like
torchrun). Every rank blocks reading a pipe nobody writes (the same line for all, a recv the
others wait in); rank R first sleeps S seconds, so it arrives last. Right before blocking, each
rank writes "RANK PID TID MONOTONIC" (the oracle for blocked_s) to FILE, then says it parked.
With --rss-mb, every rank first touches M MiB of memory (the oracle for rss). Once every rank
sits in read(), "ready" goes to READY (fd number or FIFO path). Stdlib only.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hs_rank_ready as ready  # noqa: E402


def wait_in_recv(fd):
    return os.read(fd, 1)  # HS-LINE: wait_in_recv


def rank_main(rank, args):
    ballast = bytearray(args.rss_mb << 20) if args.rss_mb else None
    if ballast is not None:
        for i in range(0, len(ballast), 4096):
            ballast[i] = 1
    if rank == args.late:
        time.sleep(args.delay)
    r, _w = os.pipe()
    now = time.clock_gettime(time.CLOCK_MONOTONIC)
    with open(args.times, "a") as fh:
        fh.write(f"{rank} {os.getpid()} {threading.get_native_id()} {now:.6f}\n")
    ready.notify_parked(rank, str(ready.SYS_READ))
    wait_in_recv(r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ready")
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--late", type=int, default=1)
    ap.add_argument("--delay", type=float, default=3.0)
    ap.add_argument("--times", required=True)
    ap.add_argument("--rss-mb", type=int, default=0)
    args = ap.parse_args()
    if "RANK" in os.environ:
        rank_main(int(os.environ["RANK"]), args)
        return
    rundir = tempfile.mkdtemp(prefix="hs-staggered-")
    ctl = os.path.join(rundir, "ctl")
    with ready.ParkCollector(ctl) as collector:
        procs = []
        for r in range(args.world):
            env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(args.world))
            env[ready.CTL_ENV] = ctl
            procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + sys.argv[1:],
                                          env=env, stdin=subprocess.DEVNULL))
        collector.wait(range(args.world), timeout=60 + args.delay,
                       alive=lambda: all(p.poll() is None for p in procs))
    ready.say_ready(args.ready)
    for p in procs:
        p.wait()


if __name__ == "__main__":
    main()
