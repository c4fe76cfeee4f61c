#!/usr/bin/env python3
"""One rank of a Slurm job doing the ring all-reduce of tests/programs/ring_allreduce.py.

Why: the multi-node tests need a real job whose ranks are Slurm tasks (srun sets
SLURM_PROCID, SLURM_NTASKS, SLURMD_NODENAME), spread over the test cluster's nodes, with one
rank that goes elsewhere. The ring, the odd rank's path and the "parked" handshake
(HS_RANK_CTL) are ring_allreduce's own, so the lines the tests expect are its HS-LINE markers.
All "nodes" of the test cluster share this machine, so the ring's Unix sockets in RUNDIR
connect ranks across nodes.

usage: slurm_ring.py PROGRAMS_DIR RUNDIR ODD_RANK
"""

import os
import sys


def main():
    programs, rundir, odd = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sys.path.insert(0, programs)
    import ring_allreduce as ring  # noqa: E402  (tests/programs, found at run time)

    rank = int(os.environ["SLURM_PROCID"])
    world = int(os.environ["SLURM_NTASKS"])
    ring.rank_main(rank, world, odd, rundir)


if __name__ == "__main__":
    main()
