#!/usr/bin/env python3
"""One rank of a torch.distributed (gloo, CPU) job in which rank ODD skips an all_reduce and the
others give up after a short timeout, printing gloo's own error and a traceback.

Why: the logs a real timed-out job leaves, for `hangscan logs` (issue 35): the ranks that waited
print gloo's "Timed out waiting Nms for recv operation to complete" in a RuntimeError's
traceback and exit; the rank they waited for prints nothing. The test starts one process per
rank with its stderr in a file of its own (as Slurm's %t output files are).

usage: gloo_timeout.py RANK WORLD ODD STORE_FILE TIMEOUT_S
"""

import datetime
import sys
import time

import torch
import torch.distributed as dist


def main():
    rank, world, odd = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    store, timeout = sys.argv[4], float(sys.argv[5])
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout))
    tensor = torch.ones(4)
    dist.all_reduce(tensor)  # every rank joins the first one
    if rank == odd:
        time.sleep(3600)  # the odd rank's other path: it never joins the second
    dist.all_reduce(tensor)  # HS-LINE: gloo-timeout-allreduce


if __name__ == "__main__":
    main()
