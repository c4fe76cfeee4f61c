"""asyncio event loops in several threads, for hangscan's 3.14 task-list tests.

Usage: python py_asyncio_threads.py READY_FD SELF_VIEW_JSON

3.14 keeps each thread's tasks on a list in that thread's state, and moves the tasks of a
thread that ended to a list in the interpreter. Here:
  in-a, in-b   tasks of loops running in two threads, each waiting on an Event nobody sets,
               each awaited by its loop's main task (Task-N);
  orphan       a task of a third thread's loop; that thread ends with the task still pending
               (kept alive by a global), so the task moves to the interpreter's list.
Once all are suspended, the interpreter's own view of each task (py_asyncio.view_of) is
written to SELF_VIEW_JSON, then "ready" to READY_FD; the main thread then blocks.
"""
import asyncio
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_asyncio import view_of  # noqa: E402

TASKS = []
KEEP = []
NEVER = threading.Lock()
NEVER.acquire()


async def wait_forever(ready):
    TASKS.append(asyncio.current_task())
    ready.set()
    await asyncio.Event().wait()  # MARK thread_wait


def run_loop(task_name, ready):
    async def main():
        TASKS.append(asyncio.current_task())  # Task-N, awaiting the task below
        await asyncio.create_task(wait_forever(ready), name=task_name)  # MARK main_await
    asyncio.run(main())


def orphan():
    loop = asyncio.new_event_loop()
    started = threading.Event()
    task = loop.create_task(wait_forever(started), name="orphan")
    loop.run_until_complete(asyncio.sleep(0.05))
    KEEP.append((loop, task))  # still pending when this thread ends


def suspended(task):
    coro = task.get_coro()
    return coro.cr_frame is not None and not coro.cr_running and coro.cr_await is not None


if __name__ == "__main__":
    ready = [threading.Event(), threading.Event()]
    for name, ev in zip(("in-a", "in-b"), ready):
        threading.Thread(target=run_loop, args=(name, ev), daemon=True).start()
    t = threading.Thread(target=orphan)
    t.start()
    t.join()
    for ev in ready:
        ev.wait()
    while not all(suspended(task) for task in TASKS):
        time.sleep(0.01)
    views = sorted((view_of(task) for task in TASKS), key=lambda v: v["name"])
    with open(sys.argv[2] + ".tmp", "w") as fh:
        json.dump(views, fh)
    os.rename(sys.argv[2] + ".tmp", sys.argv[2])
    os.write(int(sys.argv[1]), b"ready\n")
    NEVER.acquire()
