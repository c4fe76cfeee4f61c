"""A Python target that blocks threads at known lines, for hangscan's Python tests.

Usage: python py_hang.py READY_FD [SELF_VIEW_JSON [--spin]]

Runs under every CPython 3.6-3.14 (no syntax newer than 3.6). Every blocking line carries a
"# MARK name" comment; the tests read the same comments to know the expected lines. Once every
thread is at its line and asleep in the kernel, "ready" is written to READY_FD. The process
then blocks forever; the test kills it. With SELF_VIEW_JSON, the interpreter's own view of
every blocked thread's stack (sys._current_frames) is written there first: the oracle the
tests compare hangscan's frames with, frame by frame. With --spin, one more thread loops in
Python forever and so holds the GIL. One thread always runs time.sleep as its thread function
(no Python frame at all): an idle Python thread.
"""
import asyncio
import json
import ctypes
import os
import queue
import re
import select
import socket
import sys
import threading
import _thread
import time

HERE = os.path.abspath(__file__)
DEPTH = 50


def marks():
    tag = re.compile("# " + "MARK " + r"([a-z_]+)\s*$")
    found = {}
    with open(HERE) as fh:
        for lineno, line in enumerate(fh, 1):
            m = tag.search(line)
            if m:
                found[m.group(1)] = lineno
    return found


def native_tid():
    if hasattr(threading, "get_native_id"):
        return threading.get_native_id()
    return ctypes.CDLL(None, use_errno=True).syscall(186)  # SYS_gettid on x86-64


ARRIVED = {}
ARRIVED_LOCK = threading.Lock()


def arrive(name):
    with ARRIVED_LOCK:
        ARRIVED[name] = (threading.get_ident(), native_tid())


def wait_event(ev):
    arrive("event_wait")
    ev.wait()  # MARK event_wait


def acquire_lock(lock):
    arrive("lock_acquire")
    lock.acquire()  # MARK lock_acquire


def sleep_long():
    arrive("time_sleep")
    time.sleep(3600)  # MARK time_sleep


def select_wait(r):
    arrive("select")
    select.select([r], [], [])  # MARK select


def accept_wait(srv):
    arrive("socket_accept")
    srv.accept()  # MARK socket_accept


def queue_get(q):
    arrive("queue_get")
    q.get()  # MARK queue_get


def recurse(n, lock):
    if n > 0:
        return recurse(n - 1, lock)  # MARK recurse_call
    arrive("recurse_bottom")
    lock.acquire()  # MARK recurse_bottom


def gen_blocker(lock):
    yield 1
    arrive("gen_block")
    lock.acquire()  # MARK gen_block
    yield 2


def consume_gen(lock):
    total = 0
    for x in gen_blocker(lock):  # MARK gen_consume
        total += x
    return total


async def inner_coro(lock):
    arrive("coro_inner")
    lock.acquire()  # MARK coro_inner


async def outer_coro(lock):
    await inner_coro(lock)  # MARK coro_outer


def run_coro(lock):
    loop = asyncio.new_event_loop()
    loop.run_until_complete(outer_coro(lock))  # MARK coro_run


def c_blocker():
    libc = ctypes.CDLL(None)
    arrive("ctypes_pause")
    libc.pause()  # MARK ctypes_pause


def counter_loop(lock):
    label = "counter"
    ratio = 1.5
    items = [1, 2, 3]
    pair = (4, 5)
    blob = b"xyz"
    flag = True
    nothing = None
    big = 2 ** 70
    neg = -5
    long_text = "y" * 100
    table = {"a": 1}
    for i in range(100):
        if i == 41:
            arrive("counter_wait")
            lock.acquire()  # MARK counter_wait
    return label, ratio, items, pair, blob, flag, nothing, big, neg, long_text, table


SPINNING = []


def spin():
    SPINNING.append(native_tid())
    n = 0
    while True:  # MARK spin_loop
        n += 1  # MARK spin_add


def held_lock():
    lock = threading.Lock()
    lock.acquire()
    return lock


def thread_state(tid):
    try:
        with open("/proc/self/task/%d/stat" % tid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "?"


def innermost_line(ident):
    frame = sys._current_frames().get(ident)
    while frame is not None:
        if os.path.abspath(frame.f_code.co_filename) == HERE:
            return frame.f_lineno
        frame = frame.f_back
    return None


def all_blocked(expected):
    if len(ARRIVED) < len(expected):
        return False
    for name, (ident, tid) in ARRIVED.items():
        if innermost_line(ident) != expected[name] or thread_state(tid) != "S":
            return False
    return True


def self_view(path):
    """{native tid: [[function, file, line], ...] innermost first} for the blocked threads."""
    frames = sys._current_frames()
    view = {}
    for name, (ident, tid) in ARRIVED.items():
        stack = []
        frame = frames.get(ident)
        while frame is not None:
            code = frame.f_code
            stack.append([getattr(code, "co_qualname", code.co_name), code.co_filename,
                          frame.f_lineno])
            frame = frame.f_back
        view[str(tid)] = {"mark": name, "frames": stack}
    view["spin"] = SPINNING[0] if SPINNING else None
    with open(path + ".tmp", "w") as fh:
        json.dump(view, fh)
    os.rename(path + ".tmp", path)


def start_threads():
    ev = threading.Event()
    r, w = os.pipe()
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    q = queue.Queue()
    jobs = [
        (wait_event, (ev,)),
        (acquire_lock, (held_lock(),)),
        (sleep_long, ()),
        (select_wait, (r,)),
        (accept_wait, (srv,)),
        (queue_get, (q,)),
        (recurse, (DEPTH, held_lock())),
        (consume_gen, (held_lock(),)),
        (run_coro, (held_lock(),)),
        (c_blocker, ()),
        (counter_loop, (held_lock(),)),
    ]
    keep = [ev, r, w, srv, q]
    # A thread state that never runs Python code: the thread function is a C function.
    _thread.start_new_thread(time.sleep, (3600,))
    if "--spin" in sys.argv[3:]:
        t = threading.Thread(target=spin, name="spin")
        t.daemon = True
        t.start()
        keep.append(t)
    for fn, args in jobs:
        t = threading.Thread(target=fn, args=args, name=fn.__name__)
        t.daemon = True
        t.start()
        keep.append(t)
    return keep


def main():
    ready_fd = int(sys.argv[1])
    found = marks()
    expected = dict((k, v) for k, v in found.items()
                    if k not in ("recurse_call", "gen_consume", "coro_outer", "coro_run",
                                 "main_block", "module_main", "spin_loop", "spin_add"))
    keep = start_threads()
    deadline = time.time() + 30
    stable = 0
    while stable < 2:
        if time.time() > deadline:
            sys.stderr.write("py_hang: threads did not block: %r\n" % (ARRIVED,))
            sys.exit(1)
        # Sleeping releases the GIL, so a thread that was waiting for it reaches its call.
        time.sleep(0.05)
        stable = stable + 1 if all_blocked(expected) else 0
    while "--spin" in sys.argv[3:] and not SPINNING:
        time.sleep(0.01)
    if len(sys.argv) > 2:
        self_view(sys.argv[2])
    os.write(ready_fd, b"ready\n")
    forever = held_lock()
    forever.acquire()  # MARK main_block
    return keep


if __name__ == "__main__":
    main()  # MARK module_main
