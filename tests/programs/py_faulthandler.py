"""Threads blocked at known lines, and CPython's own account of their stacks (faulthandler).

Usage: python py_faulthandler.py READY_FD OUT_DIR      (any CPython 3.6+)

Why: hangscan reads Python frames from raw interpreter memory; faulthandler is CPython's own
C-level walker of the same thread states, so the two must agree frame for frame. Every thread
blocks at a line marked "# HS-LINE: name" (a method, a closure, a lambda, a generator, a
recursion, the main thread); once all of them sleep, this writes OUT_DIR/threads.json
({"0x<thread ident>": native tid}: faulthandler names threads by ident) and registers
faulthandler on SIGUSR1 (all threads, into OUT_DIR/faulthandler.txt), then says "ready". The
test sends SIGUSR1 when it wants CPython's account: the handler interrupts one blocked thread,
which goes back to the same wait (the interrupted call is retried in C), so nothing moves.
"""
import ctypes
import faulthandler
import json
import os
import signal
import sys
import threading
import time

ARRIVED = []
LOCK = threading.Lock()
LIBC = ctypes.CDLL(None, use_errno=True)
SYS_GETTID = 186   # x86-64
TIDS = {}


def arrive(name):
    with LOCK:
        TIDS["0x%x" % threading.get_ident()] = LIBC.syscall(SYS_GETTID)
        ARRIVED.append(name)


class Worker(object):
    def __init__(self, event):
        self.event = event

    def run(self):
        self.step(3)  # HS-LINE: run_calls_step

    def step(self, depth):
        if depth > 0:
            return self.step(depth - 1)  # HS-LINE: step_recurse
        arrive("worker")
        self.event.wait()  # HS-LINE: worker_wait


def make_waiter(lock):
    def inner():
        arrive("closure")
        lock.acquire()  # HS-LINE: closure_wait
    return inner


def slow_gen():
    arrive("generator")
    yield time.sleep(3600)  # HS-LINE: gen_sleep


def consume():
    for _ in slow_gen():  # HS-LINE: consume_next
        pass


def cond_wait(cond):
    with cond:
        arrive("lambda")
        cond.wait()  # HS-LINE: cond_wait


def sleeps_in_syscall(tid):
    """The kernel's view (as in hs_ready.h): the thread sleeps in a system call."""
    try:
        with open("/proc/self/task/%d/syscall" % tid) as fh:
            return not fh.read().startswith("running")
    except OSError:
        return False


def wait_blocked(count):
    """Until every thread has arrived and sleeps, on two looks in a row: between them this
    thread sleeps without the GIL, so one that only waited for the GIL moves on meanwhile."""
    deadline = time.time() + 60
    calm = 0
    while calm < 2:
        if time.time() > deadline:
            sys.stderr.write("py_faulthandler: threads did not block\n")
            sys.exit(1)
        time.sleep(0.02)
        with LOCK:
            tids = list(TIDS.values()) if len(ARRIVED) == count else []
        calm = calm + 1 if tids and all(sleeps_in_syscall(t) for t in tids) else 0


def main():
    ready_fd = int(sys.argv[1])
    out_dir = sys.argv[2]
    held = threading.Lock()
    held.acquire()
    cond = threading.Condition()
    threads = [threading.Thread(target=Worker(threading.Event()).run, name="worker"),
               threading.Thread(target=make_waiter(held), name="closure"),
               threading.Thread(target=consume, name="generator"),
               threading.Thread(target=lambda: cond_wait(cond), name="lambda")]  # HS-LINE: lambda
    for t in threads:
        t.daemon = True
        t.start()
    wait_blocked(len(threads))
    TIDS["0x%x" % threading.get_ident()] = LIBC.syscall(SYS_GETTID)
    with open(os.path.join(out_dir, "threads.json"), "w") as fh:
        json.dump(TIDS, fh)
    report = open(os.path.join(out_dir, "faulthandler.txt"), "w")
    faulthandler.register(signal.SIGUSR1, file=report, all_threads=True)
    os.write(ready_fd, b"ready\n")
    forever = threading.Lock()
    forever.acquire()
    forever.acquire()  # HS-LINE: main_block


if __name__ == "__main__":
    main()  # HS-LINE: module_main
