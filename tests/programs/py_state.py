"""A Python target for thread names, local values, positions and interpreter state.

Usage: python py_state.py READY_FD MODE [SELF_VIEW_JSON]

Runs under every CPython 3.6-3.14 (no syntax newer than 3.6). Modes:
  threads   named threads block at marked lines; one of them holds locals of every kind. The
            view (SELF_VIEW_JSON) maps each native tid to its Python thread name and, on 3.11+,
            the (line, end_line, column, end_column) CPython itself reports for each frame
            (code.co_positions() at f_lasti): the oracles for names and positions.
  gc        the main thread runs gc.collect(); a finalizer it calls blocks (the collector is
            still running).
  shutdown  the interpreter shuts down; a finalizer run while module globals are cleared
            blocks with no Python frame on the stack.
"ready" is written to READY_FD once everything blocks; the test kills the process.
"""
import gc
import json
import os
import sys
import threading
import time

HERE = os.path.abspath(__file__)
ARRIVED = {}
ARRIVED_LOCK = threading.Lock()
NEVER = threading.Lock()
NEVER.acquire()


def native_tid():
    if hasattr(threading, "get_native_id"):
        return threading.get_native_id()
    import ctypes
    return ctypes.CDLL(None, use_errno=True).syscall(186)  # SYS_gettid on x86-64


def arrive(key):
    with ARRIVED_LOCK:
        ARRIVED[key] = (threading.get_ident(), native_tid(), threading.current_thread().name)


class Custom(object):
    pass


def values_frame():
    ints = [-1234, 5678]
    letters = ('a', 'b', 'c')
    mapping = {'a': False, 'b': (1, 2, 3)}
    many = list(range(1000))
    small_set = {1, 2, 3}
    empty_set = set()
    frozen = frozenset()
    text = "h\u00e9llo w\u00f6rld \u2713"
    quote = "it's"
    raw = b"\x00ab\xff'"
    huge = 3 ** 100
    negbig = -(2 ** 64)
    tenth = 0.1
    large = 1e16
    neg_zero = -0.0
    nested = [[1, [2, [3, [4]]]]]
    obj = Custom()
    empty = ()
    single = (1,)
    nothing = None
    arrive("values")
    NEVER.acquire()  # MARK values_wait
    return (ints, letters, mapping, many, small_set, empty_set, frozen, text, quote, raw, huge,
            negbig, tenth, large, neg_zero, nested, obj, empty, single, nothing)


def compute(x):
    return x * 2


def expression_frame():
    arrive("expression")
    total = compute(1) + block_in(NEVER) + compute(2)  # MARK expression
    return total


def block_in(lock):
    lock.acquire()  # MARK block_in
    return 0


def plain_wait():
    arrive("plain " + threading.current_thread().name)
    NEVER.acquire()  # MARK plain_wait


class Worker(threading.Thread):
    def run(self):
        plain_wait()


def positions(frame):
    """CPython's own (line, end_line, column, end_column) of a frame (3.11+), else None."""
    code = frame.f_code
    if not hasattr(code, "co_positions") or frame.f_lasti < 0:
        return None
    return list(list(code.co_positions())[frame.f_lasti // 2])


def self_view(path):
    frames = sys._current_frames()
    view = {}
    for key, (ident, tid, name) in ARRIVED.items():
        stack = []
        frame = frames.get(ident)
        while frame is not None:
            stack.append([frame.f_code.co_name, frame.f_lineno, positions(frame)])
            frame = frame.f_back
        view[str(tid)] = {"key": key, "name": name, "ident": ident, "frames": stack}
    with open(path + ".tmp", "w") as fh:
        json.dump(view, fh)
    os.rename(path + ".tmp", path)


def all_blocked(n):
    if len(ARRIVED) < n:
        return False
    for ident, tid, name in ARRIVED.values():
        try:
            with open("/proc/self/task/%d/stat" % tid) as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] != "S":
                    return False
        except OSError:
            return False
    return True


def threads_mode(ready_fd, view_path):
    started = [
        threading.Thread(target=values_frame, name="CustomThreadName-3"),
        threading.Thread(target=expression_frame, name="pt_autograd_0"),
        threading.Thread(target=plain_wait, name="w\u00f6rker-\u03bb"),
        Worker(name="subclassed worker"),
    ]
    for t in started:
        t.daemon = True
        t.start()
    deadline = time.time() + 30
    while not all_blocked(len(started)):
        if time.time() > deadline:
            sys.stderr.write("py_state: threads did not block: %r\n" % (ARRIVED,))
            sys.exit(1)
        time.sleep(0.02)
    arrive("main")
    self_view(view_path)
    os.write(ready_fd, b"ready\n")
    NEVER.acquire()  # MARK main_wait


class Cycle(object):
    def __init__(self, ready_fd, view_path):
        self.me = self
        self.ready_fd = ready_fd
        self.view_path = view_path

    def __del__(self):
        arrive("gc")
        self_view(self.view_path)
        os.write(self.ready_fd, b"ready\n")
        NEVER.acquire()  # MARK gc_del


def gc_mode(ready_fd, view_path):
    gc.disable()
    Cycle(ready_fd, view_path)
    gc.collect()  # MARK gc_collect


class Blocker(object):
    # A builtin bound method is not a descriptor: the finalizer calls NEVER.acquire() itself,
    # from C, with no Python frame.
    __del__ = NEVER.acquire


class Announcer(object):
    def __init__(self, ready_fd):
        self.ready_fd = ready_fd
        self.blocker = Blocker()

    def __del__(self, write=os.write):
        write(self.ready_fd, b"ready\n")


def main():
    ready_fd = int(sys.argv[1])
    mode = sys.argv[2]
    view = sys.argv[3] if len(sys.argv) > 3 else os.devnull
    if mode == "threads":
        threads_mode(ready_fd, view)
    elif mode == "gc":
        gc_mode(ready_fd, view)
    elif mode == "shutdown":
        # Cleared with the module's globals after the interpreter started finalizing; its
        # finalizer says ready, then its Blocker's finalizer blocks.
        globals()["ANNOUNCER"] = Announcer(ready_fd)
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()  # MARK module_main
