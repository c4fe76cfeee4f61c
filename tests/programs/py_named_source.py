"""A Python target whose running code names a file of the test's choosing.

Usage: python3.11 py_named_source.py READY_FD NAME

Compiles five lines under the file name NAME (as exec(compile(src, NAME, "exec")) does) and
blocks at line 5 of them, in select(); "ready" goes to READY_FD just before. Why: the name of
a running code object is the target's to choose; hangscan may show line 5 of NAME as the
running code only where the process's own user could read NAME, and only when NAME is a
regular file that did not change after the process started.
"""
import os
import select
import sys


def park(fd):
    os.write(fd, b"ready\n")
    os.close(fd)
    select.select([], [], [])  # MARK park


code = compile("\n\n\n\npark(READY)\n", sys.argv[2], "exec")
exec(code, {"park": park, "READY": int(sys.argv[1])})
