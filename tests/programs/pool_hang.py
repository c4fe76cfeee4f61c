"""multiprocessing.Pool(4).map with one task that never ends: the pool hang of everyday code.

Usage: python3 pool_hang.py READY [--workers N] [--tasks T] [--context fork|spawn|forkserver]

The parent maps `work` over T tasks (chunksize 1) in a Pool of N workers (fork by default). Task 0 never
ends: it sleeps in a loop at HS-LINE work. The other tasks return at once, so the other
workers go back to the pool's task loop and wait there for tasks that never come. A thread of
the parent says "ready" (fd number or FIFO path) once task 0 sleeps, the other tasks are done
and every worker sits in a system call. Stdlib only.
"""
import multiprocessing as mp
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hs_rank_ready as ready  # noqa: E402

STUCK = DONE = None  # shared with the workers (initializer: spawn and forkserver too)


def share(stuck, done):
    global STUCK, DONE
    STUCK, DONE = stuck, done


def work(i):
    if i == 0:
        STUCK.set()
        while True:
            time.sleep(3600)  # HS-LINE: work
    with DONE.get_lock():
        DONE.value += 1
    return i


def all_in_syscalls(pids, end):
    """True once every pid's main thread was seen in a system call three times running."""
    stable = 0
    while stable < 3:
        if time.monotonic() > end:
            return False
        calls = [ready.thread_syscall(pid, pid) for pid in pids]
        stable = stable + 1 if all(c is not None and c >= 0 for c in calls) else 0
        time.sleep(0.05)
    return True


def say_when_parked(pool, tasks, where):
    end = time.monotonic() + 60
    if not STUCK.wait(60):
        return
    while DONE.value < tasks - 1:
        if time.monotonic() > end:
            return
        time.sleep(0.01)
    if all_in_syscalls([p.pid for p in pool._pool], end):
        ready.say_ready(where)


def main():
    where = sys.argv[1]
    workers = int(sys.argv[sys.argv.index("--workers") + 1]) if "--workers" in sys.argv else 4
    tasks = int(sys.argv[sys.argv.index("--tasks") + 1]) if "--tasks" in sys.argv else 8
    ctx = mp.get_context(sys.argv[sys.argv.index("--context") + 1]
                         if "--context" in sys.argv else "fork")
    share(ctx.Event(), ctx.Value("i", 0))
    with ctx.Pool(workers, initializer=share, initargs=(STUCK, DONE)) as pool:
        threading.Thread(target=say_when_parked, args=(pool, tasks, where), daemon=True).start()
        pool.map(work, range(tasks), chunksize=1)  # HS-LINE: map


if __name__ == "__main__":
    main()
