"""A Python target for the container tests: one thread asleep at a known line.

Usage: python3 py_container.py READY_FIFO

Runs inside a container (Debian 12's python3, no packages). The main thread calls two
functions down to a sleep marked "# MARK name" (the tests read the marks for the expected
lines), writes "ready" into READY_FIFO (a FIFO the test bind-mounts into the container) and
sleeps until the test removes the container.
"""
import sys
import time


def park(fifo):
    with open(fifo, "w") as f:
        f.write("ready\n")
    time.sleep(3600)  # MARK park


def serve(fifo):
    park(fifo)  # MARK serve


serve(sys.argv[1])  # MARK module
