"""Two threads take two threading.RLocks in opposite orders; a third waits on a threading.Lock.

Usage: python3 py_rlock_cycle.py READY FAULTHANDLER_FILE

Thread "post" holds LEDGER and waits for JOURNAL, thread "audit" holds JOURNAL and waits for
LEDGER, both at HS-LINE second (a barrier makes sure each holds its first lock before it asks
for the second). Thread "clerk" waits at HS-LINE clerk for a
threading.Lock the main thread holds (a Lock records no owner). The main thread says "ready"
(fd number or FIFO path) once the three sit in futex(), then joins "post". SIGUSR1 makes
faulthandler write every thread's stack to FAULTHANDLER_FILE. Works on Python 3.6 and later.
"""
import faulthandler
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hs_rank_ready as ready  # noqa: E402

LEDGER = threading.RLock()
JOURNAL = threading.RLock()
DESK = threading.Lock()
BOTH = threading.Barrier(2)
TIDS = {}


def gettid():
    import ctypes
    return ctypes.CDLL(None).syscall(186)  # SYS_gettid (x86-64)


def take(name, first, second):
    TIDS[name] = gettid()
    with first:
        BOTH.wait()
        with second:  # HS-LINE: second
            pass


def clerk():
    TIDS["clerk"] = gettid()
    with DESK:  # HS-LINE: clerk
        pass


def main():
    faulthandler.register(signal.SIGUSR1, file=open(sys.argv[2], "w"), all_threads=True)
    DESK.acquire()
    threads = [threading.Thread(target=take, name="post", args=("post", LEDGER, JOURNAL)),
               threading.Thread(target=take, name="audit", args=("audit", JOURNAL, LEDGER)),
               threading.Thread(target=clerk, name="clerk")]
    for t in threads:
        t.start()
    end = time.monotonic() + 60
    stable = 0
    while stable < 3:
        if time.monotonic() > end:
            return
        calls = [ready.thread_syscall(os.getpid(), TIDS.get(t.name, 0)) for t in threads]
        stable = stable + 1 if calls == [ready.SYS_FUTEX] * 3 else 0
        time.sleep(0.05)
    ready.say_ready(sys.argv[1])
    threads[0].join()  # HS-LINE: join


if __name__ == "__main__":
    main()
