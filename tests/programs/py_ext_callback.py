"""Python frames above and below a C extension that links libpython3.X.so.

Usage: python py_ext_callback.py READY_FD OUT_DIR EXT_DIR      (any CPython 3.6+)

Why: an extension library linked against libpython3.X.so maps a second CPython runtime into a
python3 that carries its own (Debian's static python3.11): the library's runtime is never
initialized, and the frames are in the executable's. EXT_DIR holds hs_callback.so (built by
the test), whose call(fn) calls fn() from C. Two threads block in Python code called from C
through it, at lines marked "# HS-LINE: name"; once both sleep, this writes
OUT_DIR/threads.json ({"0x<thread ident>": native tid}) and registers faulthandler on SIGUSR1
(all threads, into OUT_DIR/faulthandler.txt), then says "ready" from inside the callback.
"""
import ctypes
import faulthandler
import json
import os
import signal
import sys
import threading
import time

LIBC = ctypes.CDLL(None, use_errno=True)
SYS_GETTID = 186   # x86-64
TIDS = {}
LOCK = threading.Lock()


def arrive():
    with LOCK:
        TIDS["0x%x" % threading.get_ident()] = LIBC.syscall(SYS_GETTID)


def in_worker(held):
    arrive()
    held.acquire()  # HS-LINE: worker_wait


def worker(ext, held):
    ext.call(lambda: in_worker(held))  # HS-LINE: worker_calls_c


def sleeps_in_syscall(tid):
    try:
        with open("/proc/self/task/%d/syscall" % tid) as fh:
            return not fh.read().startswith("running")
    except OSError:
        return False


def in_main(ready_fd, out_dir, thread):
    deadline = time.time() + 60
    while not (len(TIDS) == 1 and sleeps_in_syscall(list(TIDS.values())[0])):
        if time.time() > deadline or not thread.is_alive():
            sys.stderr.write("py_ext_callback: the worker did not block\n")
            sys.exit(1)
        time.sleep(0.02)
    arrive()
    with open(os.path.join(out_dir, "threads.json"), "w") as fh:
        json.dump(TIDS, fh)
    report = open(os.path.join(out_dir, "faulthandler.txt"), "w")
    faulthandler.register(signal.SIGUSR1, file=report, all_threads=True)
    os.write(ready_fd, b"ready\n")
    forever = threading.Lock()
    forever.acquire()
    forever.acquire()  # HS-LINE: main_wait


def main():
    ready_fd, out_dir = int(sys.argv[1]), sys.argv[2]
    sys.path.insert(0, sys.argv[3])
    import hs_callback
    held = threading.Lock()
    held.acquire()
    thread = threading.Thread(target=worker, args=(hs_callback, held), name="worker")
    thread.daemon = True
    thread.start()
    hs_callback.call(lambda: in_main(ready_fd, out_dir, thread))  # HS-LINE: main_calls_c


if __name__ == "__main__":
    main()  # HS-LINE: module_main
