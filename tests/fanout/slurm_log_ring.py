#!/usr/bin/env python3
"""A rank of slurm_ring.py's job that first writes its log, as a training script does.

Why: `--slurm-job J --logs ...` joins each rank's last log line with its stack; this rank says
what it is about to do on stdout (which srun -o writes to the task's own file), then does it:
the odd rank goes to wait_for_checkpoint, the others into the ring's all_reduce.

usage: slurm_log_ring.py PROGRAMS_DIR RUNDIR ODD_RANK
"""

import os
import sys

from slurm_ring import main

rank, odd = int(os.environ["SLURM_PROCID"]), int(sys.argv[3])
print(f"rank {rank}: step 41 done", flush=True)
if rank == odd:
    print(f"rank {rank}: saving checkpoint to /ckpt/step-42", flush=True)
else:
    print(f"rank {rank}: step 42 all_reduce", flush=True)
main()
