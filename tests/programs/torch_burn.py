"""A process burning CPU inside torch's matrix product, called from a known Python line.

Usage: python3 torch_burn.py READY_FD

Why: an on-CPU sample of a training step lands deep in a native library (BLAS under torch's
dispatcher: tens of native frames) far below the Python line that called it. `hangscan watch`
must still show that line in its text, past the innermost frames it prints. The main thread
multiplies matrices in burn() on the marked line forever (torch limited to one thread, so
every sample is this thread's); it says ready once the first product is done.
"""
import os
import sys

import torch


def burn(ready_fd):
    torch.set_num_threads(1)
    a = torch.randn(256, 256)
    said = False
    while True:
        b = torch.mm(a, a)  # HS-LINE: burn_mm
        if not said:
            os.write(ready_fd, b"ready\n")
            os.close(ready_fd)
            said = True
        a = b / b.norm()


burn(int(sys.argv[1]))  # HS-LINE: module_burn
