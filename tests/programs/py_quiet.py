"""Python threads blocked in different ways, for the quiet dump (test_quiet_dump.py).

Usage: python py_quiet.py READY_FD N FAULTHANDLER_OUT [DEPTH]

Thread i runs worker(i) -> wait_in(i), which blocks by kind i % 5: queue.get (MARK q_get),
Lock.acquire of a held lock (MARK q_lock), time.sleep (MARK q_sleep), socket recv
(MARK q_recv), Event.wait (MARK q_event). Nothing ever wakes them. The main thread waits in
Event.wait (MARK q_main). "ready" is written once every worker is about to block (callers then
wait until every thread sleeps in the kernel). SIGUSR1 makes faulthandler write every thread's
stack to FAULTHANDLER_OUT (the test's oracle, asked after hangscan's dumps). With DEPTH, one
more thread ("deep") recurses DEPTH calls of deep() (MARK q_deep_call) before it blocks in
Event.wait (MARK q_deep).
"""
import faulthandler
import os
import queue
import signal
import socket
import sys
import threading
import time

NEVER = threading.Event()
HELD = threading.Lock()
QUEUE = queue.Queue()
ARRIVED = threading.Semaphore(0)
SOCKS = socket.socketpair()


def wait_in(i):
    ARRIVED.release()
    kind = i % 5
    if kind == 0:
        QUEUE.get()  # MARK q_get
    elif kind == 1:
        HELD.acquire()  # MARK q_lock
    elif kind == 2:
        time.sleep(86400)  # MARK q_sleep
    elif kind == 3:
        SOCKS[0].recv(1)  # MARK q_recv
    else:
        NEVER.wait()  # MARK q_event


def worker(i):
    wait_in(i)  # MARK q_worker


def deep(k):
    if k > 0:
        deep(k - 1)  # MARK q_deep_call
        return
    ARRIVED.release()
    NEVER.wait()  # MARK q_deep


def main():
    ready_fd = int(sys.argv[1])
    n = int(sys.argv[2])
    report = open(sys.argv[3], "w")
    faulthandler.register(signal.SIGUSR1, file=report, all_threads=True)
    HELD.acquire()
    for i in range(n):
        threading.Thread(target=worker, args=(i,), name="w%d" % i, daemon=True).start()
    depth = int(sys.argv[4]) if len(sys.argv) > 4 else -1
    if depth >= 0:
        threading.Thread(target=deep, args=(depth,), name="deep", daemon=True).start()
    for _ in range(n + (depth >= 0)):
        ARRIVED.acquire()
    os.write(ready_fd, b"ready\n")
    os.close(ready_fd)
    NEVER.wait()  # MARK q_main


if __name__ == "__main__":
    main()
