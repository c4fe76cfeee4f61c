"""A Python target with N threads blocked a few Python frames deep, for the pause benchmark.

Usage: python py_threads.py READY_FD [N=50]

Thread i runs worker(i) -> level(i, 3) -> level(i, 2) -> level(i, 1) -> park(i); park blocks
in time.sleep (i % 2 == 0, MARK park_sleep) or Event.wait (MARK park_event), so every thread
has 5-7 Python frames and a C function under them, like the threads of a training process.
The main thread waits in Event.wait too (MARK main_wait). "ready" is written to READY_FD once
every worker has reached its line (callers then wait until every thread sleeps in the kernel,
/proc/PID/task/*/stat state S); the test or benchmark kills the process.
"""
import os
import sys
import threading
import time

NEVER = threading.Event()
ARRIVED = threading.Semaphore(0)


def park(i):
    ARRIVED.release()
    if i % 2 == 0:
        while True:
            time.sleep(3600)  # MARK park_sleep
    NEVER.wait()  # MARK park_event


def level(i, depth):
    if depth == 1:
        park(i)  # MARK level_park
    else:
        level(i, depth - 1)  # MARK level_recurse


def worker(i):
    level(i, 3)  # MARK worker_level


def main():
    ready_fd = int(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    for i in range(n):
        threading.Thread(target=worker, args=(i,), name="w%d" % i, daemon=True).start()
    for _ in range(n):
        ARRIVED.acquire()
    os.write(ready_fd, b"ready\n")
    NEVER.wait()  # MARK main_wait


if __name__ == "__main__":
    main()
