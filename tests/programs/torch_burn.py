"""A process burning CPU inside torch's matrix product, called from a known Python line.

Usage: python3 torch_burn.py READY_FD OUT_DIR

Why: an on-CPU sample of a training step lands deep in a native library (BLAS under torch's
dispatcher: tens of native frames) far below the Python line that called it. `hangscan watch`
must still show that line in its text, past the innermost frames it prints. The main thread
multiplies matrices in burn() on the marked line forever (torch limited to one thread, so
every sample is this thread's); it says ready once the first product is done, after
registering CPython's own stack dump (faulthandler, the oracle) on SIGUSR1 into
OUT_DIR/faulthandler.txt.
"""
import faulthandler
import os
import signal
import sys

import torch


def burn(ready_fd, out):
    report = open(os.path.join(out, "faulthandler.txt"), "w")
    faulthandler.register(signal.SIGUSR1, file=report, all_threads=True)
    torch.set_num_threads(1)
    a = torch.randn(256, 256)
    said = False
    while True:
        b = torch.mm(a, a)  # HS-LINE: burn_mm
        if not said:
            os.write(ready_fd, b"ready\n")
            os.close(ready_fd)
            said = True
        a = b / b.norm()  # HS-LINE: burn_norm


burn(int(sys.argv[1]), sys.argv[2])  # HS-LINE: module_burn
