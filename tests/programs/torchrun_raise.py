#!/usr/bin/env python3
"""A torchrun job (gloo, CPU) in which rank BAD raises after the first all_reduce while the
others wait in a barrier; torchrun then ends the job and prints its failure summary.

Why: the logs torchrun itself leaves (issue 35): each rank's stderr under --log_dir and the
ChildFailedError summary ("Root Cause (first observed failure)") on torchrun's own stderr.

usage: torchrun ... torchrun_raise.py BAD
"""

import os
import sys

import torch
import torch.distributed as dist


def load_batch(rank, bad):
    if rank == bad:
        raise ValueError(f"rank {rank}: batch 17 is corrupt")  # HS-LINE: torchrun-raise
    return torch.ones(4)


def main():
    bad = int(sys.argv[1])
    dist.init_process_group("gloo")
    rank = int(os.environ["RANK"])
    tensor = torch.ones(4)
    dist.all_reduce(tensor)
    tensor = load_batch(rank, bad)
    dist.barrier()


if __name__ == "__main__":
    main()
