"""A Python target holding GiBs of bytearrays, with threads blocked at known lines.

Usage: python py_big.py READY_FD [MIB]   (default 2048 MiB)

Why: `hangscan gcore` must write a core far smaller than the process (the arrays are left
out) that still shows every thread's full Python and native stack. The arrays are filled
(not zero pages), so they are resident like real tensors. Once every thread sits at its
line ("HS-LINE: tag" comments; the tests read them), "ready" is written to READY_FD.
"""
import os
import sys
import threading
import time

CHUNK = 64 << 20
ARRIVED = []
LOCK = threading.Lock()


def hold_arrays(mib):
    arrays = []
    left = mib << 20
    while left > 0:
        n = min(CHUNK, left)
        arrays.append(bytearray(b"\xa5") * n)
        left -= n
    return arrays


def arrive(name):
    with LOCK:
        ARRIVED.append(name)


def worker_wait(ev):
    arrive("worker_wait")
    ev.wait()  # HS-LINE: worker_wait


def nested_sleep(depth):
    if depth > 0:
        return nested_sleep(depth - 1)  # HS-LINE: nested_call
    arrive("nested_sleep")
    time.sleep(3600)  # HS-LINE: nested_sleep


def lock_wait(lock):
    arrive("lock_wait")
    lock.acquire()  # HS-LINE: lock_wait


def thread_state(tid):
    try:
        with open("/proc/self/task/%d/stat" % tid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "?"


def main():
    ready_fd = int(sys.argv[1])
    mib = int(sys.argv[2]) if len(sys.argv) > 2 else 2048
    arrays = hold_arrays(mib)
    ev = threading.Event()
    held = threading.Lock()
    held.acquire()
    threads = [threading.Thread(target=worker_wait, args=(ev,), name="worker_wait"),
               threading.Thread(target=nested_sleep, args=(5,), name="nested_sleep"),
               threading.Thread(target=lock_wait, args=(held,), name="lock_wait")]
    for t in threads:
        t.daemon = True
        t.start()
    deadline = time.time() + 60
    while True:
        if time.time() > deadline:
            sys.stderr.write("py_big: threads did not block\n")
            sys.exit(1)
        time.sleep(0.05)
        if len(ARRIVED) == len(threads) and all(
                thread_state(t.native_id) == "S" for t in threads):
            break
    os.write(ready_fd, b"ready\n")
    forever = threading.Lock()
    forever.acquire()
    forever.acquire()  # HS-LINE: main_block
    return arrays


if __name__ == "__main__":
    main()
