"""A hung asyncio service, for hangscan's asyncio task tests.

Usage: python py_asyncio.py READY_FD SELF_VIEW_JSON

Runs under CPython 3.8-3.14. Tasks, by name:
  producer     awaits an asyncio.Event nobody sets (through a helper coroutine)
  consumer     awaits the producer task
  lock-holder  holds an asyncio.Lock and sleeps
  lock-waiter  waits for that lock
  Task-1       the main coroutine (asyncio.run), waiting on an Event of its own
  reporter     writes the view below and ends (a done task, which is not listed)
Once every task is suspended, the interpreter's own view of every task (name, coroutine chain
outermost first with function, file and line, and what it waits on) is written to
SELF_VIEW_JSON and "ready" to READY_FD. The loop then waits forever; the test kills it.
"""
import asyncio
import json
import os
import sys


async def wait_for(event):
    await event.wait()  # MARK helper_wait


async def producer(event):
    await wait_for(event)  # MARK producer_wait
    return 1


async def consumer(task):
    return await task  # MARK consumer_wait


async def lock_holder(lock, held):
    async with lock:
        held.set()
        await asyncio.sleep(3600)  # MARK holder_sleep


async def lock_waiter(lock):
    async with lock:  # MARK waiter_lock
        pass


def qualname(code):
    return getattr(code, "co_qualname", code.co_name)


def chain(coro):
    """[[function, file, line], ...] from the task's own coroutine to the innermost awaited."""
    out = []
    while coro is not None and getattr(coro, "cr_frame", None) is not None:
        out.append([qualname(coro.cr_code), coro.cr_frame.f_code.co_filename,
                    coro.cr_frame.f_lineno])
        coro = coro.cr_await
    return out


def view_of(task):
    waiter = getattr(task, "_fut_waiter", None)
    return {"name": task.get_name(), "coroutines": chain(task.get_coro()),
            "awaits_task": waiter.get_name() if isinstance(waiter, asyncio.Task) else None,
            "awaits": type(waiter).__module__ + "." + type(waiter).__qualname__
            if waiter is not None else None}


async def reporter(ready_fd, view_path):
    """Writes the view once every other task is suspended, then ends (a done task)."""
    for _ in range(5):
        await asyncio.sleep(0)
    me = asyncio.current_task()
    views = [view_of(t) for t in asyncio.all_tasks() if t is not me]
    with open(view_path + ".tmp", "w") as fh:
        json.dump(sorted(views, key=lambda v: v["name"]), fh)
    os.rename(view_path + ".tmp", view_path)
    os.write(ready_fd, b"ready\n")


async def main(ready_fd, view_path):
    event = asyncio.Event()
    lock = asyncio.Lock()
    held = asyncio.Event()
    prod = asyncio.create_task(producer(event), name="producer")
    asyncio.create_task(consumer(prod), name="consumer")
    asyncio.create_task(lock_holder(lock, held), name="lock-holder")
    await held.wait()
    asyncio.create_task(lock_waiter(lock), name="lock-waiter")
    asyncio.create_task(reporter(ready_fd, view_path), name="reporter")
    await asyncio.Event().wait()  # MARK main_wait


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
