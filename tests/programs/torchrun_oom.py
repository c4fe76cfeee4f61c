#!/usr/bin/env python3
"""A torchrun job (gloo, CPU) in which the kernel OOM-kills rank OOM while the others work on,
then checkpoint when torchrun stops them.

Why: issue 35's torchrun job with an OOM-killed rank, caught while it dies. Each rank joins one
all_reduce and logs (stdout: torchrun --redirects puts it in the rank's own stdout.log) the shard
it loads. Rank OOM then parks in a sleep until SIGUSR1 and grows until its memory cgroup's OOM
killer ends it; the others wait in a sleep. torchrun reaps the dead rank and stops the others
with SIGTERM, which they take as training scripts do: they log it and save a checkpoint (here:
park until torchrun's SIGKILL, 30 s later), so the job can be captured in between.

usage: torchrun ... torchrun_oom.py OOM [exit]   (readiness: hs_rank_ready.py through $HS_RANK_CTL;
       a rank parks as RANK, then as 100 + RANK once in its SIGTERM handler)
"""

import os
import signal
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hs_rank_ready as ready  # noqa: E402
from ring_allreduce import eat_memory  # noqa: E402

HANG_S = 3600.0


def save_checkpoint(rank):
    print(f"rank {rank}: SIGTERM: saving checkpoint", flush=True)
    ready.notify_parked(100 + rank, ready.SLEEP)
    time.sleep(HANG_S)  # HS-LINE: torchrun-oom-checkpoint


def load_shard(rank):
    ready.notify_parked(rank, ready.SLEEP)
    time.sleep(HANG_S)  # HS-LINE: torchrun-oom-load


def exit_now(rank):
    # With "exit" the others end on SIGTERM: torchrun then prints its failure summary and ends
    # (the job's whole log, read afterwards).
    print(f"rank {rank}: SIGTERM: exiting", flush=True)
    os._exit(0)


def main():
    oom = int(sys.argv[1])
    dist.init_process_group("gloo")
    rank = int(os.environ["RANK"])
    dist.all_reduce(torch.ones(4))
    print(f"rank {rank}: step 7: loading shard {rank}", flush=True)
    if rank == oom:
        signal.signal(signal.SIGUSR1, eat_memory)
    else:
        on_term = exit_now if sys.argv[2:] == ["exit"] else save_checkpoint
        signal.signal(signal.SIGTERM, lambda *_: on_term(rank))
    load_shard(rank)


if __name__ == "__main__":
    main()
