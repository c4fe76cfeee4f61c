"""Forked workers that finished their work and exited 0 while one sibling is still stuck.

Usage: python3 workers_exit_clean.py READY [--mode process|executor] [--workers N]

process: the parent starts N multiprocessing fork Processes; worker 0 sleeps for ever at
HS-LINE work, the others return (exit code 0). The parent joins them in order, so it waits
for worker 0 and does not reap the others: they stay zombies that exited cleanly.
executor: a ProcessPoolExecutor of N fork workers runs N tasks that all return; then the
first worker (in start order) that is not reading the call queue is stopped (SIGSTOP: stuck, holding no task) and the executor shuts
down. Its other workers read their stop sentinel and exit 0; the executor joins its workers
in start order, so it waits for the stopped one and the ones started after it stay zombies.
A thread of the parent says "ready" (fd number or FIFO path) once those workers are zombies
and the stuck one sits in a system call or is stopped. Stdlib only.
"""
import concurrent.futures as cf
import multiprocessing as mp
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hs_rank_ready as ready  # noqa: E402
from queue_put_hang import state_of as state  # noqa: E402

CTX = mp.get_context("fork")
STARTED = CTX.Event()  # every Process started: Process.start reaps the siblings that ended


def work(i):
    if i == 0:
        while True:
            time.sleep(3600)  # HS-LINE: work
    STARTED.wait(60)
    return i


def say_when_ended(stuck, others, where):
    """Ready once the others are zombies and the stuck worker is stopped or in a syscall."""
    end = time.monotonic() + 60
    while time.monotonic() < end:
        parked = state(stuck) == "T" or (ready.thread_syscall(stuck, stuck) or -1) >= 0
        if parked and all(state(p) == "Z" for p in others):
            ready.say_ready(where)
            return
        time.sleep(0.01)


def run_processes(workers, where):
    procs = [CTX.Process(target=work, args=(i,)) for i in range(workers)]
    for p in procs:  # the others return once all are started, or start() would reap them
        p.start()
    STARTED.set()
    pids = [p.pid for p in procs]
    threading.Thread(target=say_when_ended, args=(pids[0], pids[1:], where), daemon=True).start()
    for p in procs:
        p.join()  # HS-LINE: join


def run_executor(workers, where):
    executor = cf.ProcessPoolExecutor(workers, mp_context=CTX)
    list(executor.map(int, range(workers)))
    pids = list(executor._processes)  # start order: the order shutdown joins them in
    # Stopped while it waits for a task, but not while it holds the call queue's read lock
    # (then the others could not read their sentinels): the first waiting for that lock. The
    # workers joined before it are reaped, the ones after it stay zombies.
    end = time.monotonic() + 60
    while not any(ready.thread_syscall(p, p) == ready.SYS_FUTEX for p in pids[:-1]):
        if time.monotonic() > end:
            return
        time.sleep(0.01)
    stuck = next(p for p in pids if ready.thread_syscall(p, p) == ready.SYS_FUTEX)
    os.kill(stuck, signal.SIGSTOP)
    after = pids[pids.index(stuck) + 1:]
    threading.Thread(target=say_when_ended, args=(stuck, after, where), daemon=True).start()
    executor.shutdown(wait=True)  # HS-LINE: shutdown


def main():
    where = sys.argv[1]
    workers = int(sys.argv[sys.argv.index("--workers") + 1]) if "--workers" in sys.argv else 4
    mode = sys.argv[sys.argv.index("--mode") + 1] if "--mode" in sys.argv else "process"
    (run_executor if mode == "executor" else run_processes)(workers, where)


if __name__ == "__main__":
    main()
