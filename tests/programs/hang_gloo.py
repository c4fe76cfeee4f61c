#!/usr/bin/env python3
"""torch.distributed (gloo, CPU) job of WORLD ranks where rank ODD skips an all_reduce.

Why: the hang operators meet most: one rank takes another path and every other rank waits in
a collective forever. Rank ODD goes to skip_all_reduce() (a sleep); the others block in
dist.all_reduce (natively c10d::Work::wait -> pthread_cond_wait, a futex).

usage:
  hang_gloo.py READY --launcher spawn [--world N] [--odd R]
      this process is the launcher: torch.multiprocessing.spawn starts the ranks, which set
      os.environ["RANK"] themselves (visible only in libc's environ); says "ready" on READY
      (fd number or FIFO path) once every rank is parked.
  torchrun --standalone --nproc_per_node N ... hang_gloo.py - --launcher torchrun [--odd R]
      each process is a rank (RANK/WORLD_SIZE from torchrun); readiness goes to the
      collector socket named by $HS_RANK_CTL (see hs_rank_ready.py).
  --oom-rank R: after the first all_reduce, rank R waits (parked in a sleep) for SIGUSR1, then
      grows its memory until a memory cgroup's OOM killer ends it (the test sets the limit once
      every rank is parked); the other ranks wait at a barrier through the job's store (as
      torch's store-based barrier does), which a dead peer does not break: gloo's all_reduce
      would fail at once when a peer's connection closes and torchrun would end the whole job.
"""

import argparse
import datetime
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hs_rank_ready as ready  # noqa: E402

DEADLINE_S = 240.0
HANG_S = 3600.0


def skip_all_reduce(rank):
    """The odd rank's path: it never joins the second all_reduce."""
    ready.notify_parked(rank, ready.SLEEP)
    time.sleep(HANG_S)  # HS-LINE: gloo-odd


def train_step(rank, odd, tensor):
    import torch.distributed as dist
    if rank == odd:
        skip_all_reduce(rank)
        return
    ready.notify_parked(rank, str(ready.SYS_FUTEX))
    dist.all_reduce(tensor)  # HS-LINE: gloo-allreduce


def rank_main(rank, world, odd, init_method, oom_rank=-1):
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=HANG_S))
    tensor = torch.ones(8)
    dist.all_reduce(tensor)  # every rank joins the first one
    if oom_rank >= 0:
        oom_step(rank, oom_rank)
        return
    train_step(rank, odd, tensor)


def oom_step(rank, oom_rank):
    import signal
    from torch.distributed.distributed_c10d import _get_default_store
    if rank == oom_rank:
        from ring_allreduce import eat_memory
        signal.signal(signal.SIGUSR1, eat_memory)
        ready.notify_parked(rank, ready.SLEEP)
        time.sleep(HANG_S)  # HS-LINE: gloo-oom
        return
    ready.notify_parked(rank, "any")
    _get_default_store().wait(["hs-never"])  # HS-LINE: gloo-store-barrier


def spawn_entry(rank, world, odd, init_method, ctl):
    os.environ["RANK"] = str(rank)
    os.environ["LOCAL_RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(world)
    os.environ[ready.CTL_ENV] = ctl
    rank_main(rank, world, odd, init_method)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ready")
    ap.add_argument("--launcher", choices=["spawn", "torchrun"], default="spawn")
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--odd", type=int, default=2)
    ap.add_argument("--oom-rank", type=int, default=-1)
    args = ap.parse_args()
    if args.launcher == "torchrun":
        rank_main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args.odd, "env://",
                  args.oom_rank)
        return
    import torch.multiprocessing as mp
    rundir = tempfile.mkdtemp(prefix="hs-gloo-")
    ctl = os.path.join(rundir, "ctl")
    init = "file://" + os.path.join(rundir, "store")
    with ready.ParkCollector(ctl) as collector:
        ctx = mp.spawn(spawn_entry, args=(args.world, args.odd, init, ctl), nprocs=args.world,
                       join=False)
        try:
            collector.wait(range(args.world), timeout=DEADLINE_S,
                           alive=lambda: all(p.is_alive() for p in ctx.processes))
        except ready.NotReady as e:
            print(f"hang_gloo: {e}", file=sys.stderr)
            for p in ctx.processes:
                p.kill()
            sys.exit(3)
    ready.say_ready(None if args.ready == "-" else args.ready)
    end = time.monotonic() + HANG_S
    while not ctx.join(timeout=60) and time.monotonic() < end:
        pass


if __name__ == "__main__":
    main()
