"""concurrent.futures.ProcessPoolExecutor with one task that never ends.

Usage: python3 executor_hang.py READY [--workers N] [--tasks T] [--context fork|spawn|forkserver]

Like pool_hang.py, through the executor: the parent maps `work` over T tasks in an executor
of N workers (fork by default); task 0 sleeps for ever at HS-LINE work, the others return at
once and their workers wait in the executor's call queue. A thread of the parent says "ready" (fd number or
FIFO path) once task 0 sleeps, the other tasks are done and every worker sits in a system
call. Stdlib only.
"""
import concurrent.futures as cf
import multiprocessing as mp
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hs_rank_ready as ready  # noqa: E402
import pool_hang  # noqa: E402
from pool_hang import all_in_syscalls, share  # noqa: E402



def work(i):
    if i == 0:
        pool_hang.STUCK.set()
        while True:
            time.sleep(3600)  # HS-LINE: work
    with pool_hang.DONE.get_lock():
        pool_hang.DONE.value += 1
    return i


def say_when_parked(executor, tasks, where):
    end = time.monotonic() + 60
    if not pool_hang.STUCK.wait(60):
        return
    while pool_hang.DONE.value < tasks - 1:
        if time.monotonic() > end:
            return
        time.sleep(0.01)
    if all_in_syscalls(list(executor._processes), end):
        ready.say_ready(where)


def main():
    where = sys.argv[1]
    workers = int(sys.argv[sys.argv.index("--workers") + 1]) if "--workers" in sys.argv else 4
    tasks = int(sys.argv[sys.argv.index("--tasks") + 1]) if "--tasks" in sys.argv else 8
    ctx = mp.get_context(sys.argv[sys.argv.index("--context") + 1]
                         if "--context" in sys.argv else "fork")
    share(ctx.Event(), ctx.Value("i", 0))
    with cf.ProcessPoolExecutor(workers, mp_context=ctx, initializer=share,
                                initargs=(pool_hang.STUCK, pool_hang.DONE)) as executor:
        threading.Thread(target=say_when_parked, args=(executor, tasks, where),
                         daemon=True).start()
        list(executor.map(work, range(tasks)))  # HS-LINE: map


if __name__ == "__main__":
    main()
