"""A rank that writes its log, then blocks: for `--logs` (hangscan's logs beside its stacks).

Usage: python log_ranks.py READY_FD LOG RANK ODD

Writes dated lines to LOG as a training script's logger would (the last one dated 30 s before
now, so the test knows how long before the dump it was written); every rank but ODD then waits
for its peers in wait_for_peers, rank ODD in load_batch. "ready" goes to READY_FD right before
the block; the test kills the process.
"""
import os
import sys
import time


def stamp(t):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + ",000"


def wait_for_peers(ready):
    os.write(ready, b"ready\n")
    time.sleep(3600)  # HS-LINE: peers


def load_batch(ready):
    os.write(ready, b"ready\n")
    time.sleep(3600)  # HS-LINE: batch


def main():
    ready, log, rank, odd = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    now = time.time()
    with open(log, "w") as out:
        out.write(f"{stamp(now - 40)} INFO rank {rank}: step 41 done\n")
        if rank == odd:
            out.write(f"{stamp(now - 30)} INFO rank {rank}: loading batch 17 from shard-3\n")
        else:
            out.write(f"{stamp(now - 30)} INFO rank {rank}: step 42 all_reduce\n")
    if rank == odd:
        load_batch(ready)
    else:
        wait_for_peers(ready)


main()
