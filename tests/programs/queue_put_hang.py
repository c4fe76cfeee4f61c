"""A producer blocked in Queue.put on a full queue whose consumer died.

Usage: python3 queue_put_hang.py READY

The parent forks a consumer and a producer (multiprocessing.Process) sharing a Queue of two
slots. The consumer takes one item and dies (SIGKILL, as the OOM killer would kill it); the
parent does not reap it (it joins the producer), so it stays a zombie. The producer fills the
queue and blocks in put at HS-LINE put. A thread of the parent says "ready" (fd number or FIFO
path) once the consumer is a zombie and the producer sleeps in put. Stdlib only.
"""
import multiprocessing as mp
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hs_rank_ready as ready  # noqa: E402
from pool_hang import all_in_syscalls  # noqa: E402

CTX = mp.get_context("fork")
BLOCKED = CTX.Event()


def consume(queue):
    queue.get()
    os.kill(os.getpid(), signal.SIGKILL)  # HS-LINE: die


def produce(queue):
    for i in range(1000):
        if queue.full():
            BLOCKED.set()
        queue.put(i)  # HS-LINE: put


def state_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def say_when_parked(consumer, producer, where):
    end = time.monotonic() + 60
    if not BLOCKED.wait(60):
        return
    while state_of(consumer.pid) != "Z":
        if time.monotonic() > end:
            return
        time.sleep(0.01)
    if all_in_syscalls([producer.pid], end):
        ready.say_ready(where)


def main():
    queue = CTX.Queue(2)
    consumer = CTX.Process(target=consume, args=(queue,))
    consumer.start()
    producer = CTX.Process(target=produce, args=(queue,))
    producer.start()
    threading.Thread(target=say_when_parked, args=(consumer, producer, sys.argv[1]),
                     daemon=True).start()
    producer.join()  # HS-LINE: join


if __name__ == "__main__":
    main()
