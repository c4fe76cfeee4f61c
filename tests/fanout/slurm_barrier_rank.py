#!/usr/bin/env python3
"""One rank of a Slurm job that waits at a barrier; one rank may first outgrow its memory.

Why: the Slurm deaths test needs a job whose ranks are each their own step (one `srun -N1 -n1
-w NODE --mem=...` per rank, as launchers that start one process per node do), so that Slurm
records how a rank's step ended while the others still wait. The barrier is a Unix socket in
RUNDIR that the test listens on (a rendezvous store that never says go; all "nodes" of the test
cluster share this machine): every rank connects and blocks in recv. With --eat-memory the rank
grows until its step's memory cgroup (task/cgroup, --mem) OOM-kills it, before it arrives.
Ranks learn RANK and WORLD_SIZE from the environment, as torch scripts do.

usage: slurm_barrier_rank.py PROGRAMS_DIR RUNDIR [--eat-memory]
"""

import os
import socket
import sys
import time

DEADLINE_S = 60.0


def barrier(rank, rundir, ready):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    end = time.monotonic() + DEADLINE_S
    while True:
        try:
            s.connect(os.path.join(rundir, "barrier.sock"))
            break
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > end:
                sys.exit(3)
            time.sleep(0.01)
    ready.notify_parked(rank, str(ready.SYS_RECVFROM))
    s.recv(1)  # HS-LINE: barrier


def main():
    programs, rundir = sys.argv[1], sys.argv[2]
    sys.path.insert(0, programs)
    import hs_rank_ready as ready  # noqa: E402  (tests/programs, found at run time)
    from ring_allreduce import eat_memory  # noqa: E402  (grows until the OOM killer ends it)

    rank = int(os.environ["RANK"])
    if "--eat-memory" in sys.argv[3:]:
        eat_memory()
    barrier(rank, rundir, ready)


if __name__ == "__main__":
    main()
