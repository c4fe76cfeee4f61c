"""A thread burning CPU in known Python frames, and CPython's own account of them (faulthandler).

Usage: python py_burn.py READY_FD OUT_DIR [deep]      (any CPython 3.6+)

Why: `hangscan watch` copies a sampled thread's Python frames in the kernel, at the sample, and
names them afterwards; CPython's own walker of the same thread states, faulthandler, is the
oracle. A worker thread (not the main thread: a sample must find its own thread's state among
the interpreter's) runs Burner.run -> Burner.spin, which loops on the marked lines forever;
the main thread waits in join(). Once the worker spins this writes OUT_DIR/worker.json
({"ident": "0x<thread ident>", "tid": <native tid>, "main": "0x<main thread's ident>"}:
faulthandler names threads by ident),
registers faulthandler on SIGUSR1 (all threads, into OUT_DIR/faulthandler.txt) and says ready.
With `deep`, Burner.run first descends 80 calls through map() (each call goes through C, so
each level adds eval-loop and C frames to the native stack: far deeper than a sample's 16-KiB
copy) and spins at the bottom: the sampled native stack is cut, the Python chain is not.
"""
import ctypes
import faulthandler
import json
import os
import signal
import sys
import threading

SPINNING = threading.Event()
LIBC = ctypes.CDLL(None, use_errno=True)
SYS_GETTID = 186   # x86-64


class Burner(object):
    def __init__(self, depth):
        self.depth = depth

    def run(self):
        self.tid = LIBC.syscall(SYS_GETTID)
        if self.depth:
            self.descend(self.depth)  # HS-LINE: run_calls_descend
        self.spin()  # HS-LINE: run_calls_spin

    def descend(self, depth):
        if depth == 0:
            self.spin()  # HS-LINE: descend_calls_spin
        return list(map(self.descend, [depth - 1]))  # HS-LINE: descend_map

    def spin(self):
        total = 0
        SPINNING.set()
        while True:  # HS-LINE: spin_while
            for i in range(1000):  # HS-LINE: spin_for
                total += i * i  # HS-LINE: spin_add


def main():
    ready_fd = int(sys.argv[1])
    out = sys.argv[2]
    burner = Burner(80 if sys.argv[3:] == ["deep"] else 0)
    worker = threading.Thread(target=burner.run)
    worker.daemon = True
    worker.start()
    SPINNING.wait()
    with open(os.path.join(out, "worker.json"), "w") as fh:
        json.dump({"ident": "0x%x" % worker.ident, "tid": burner.tid,
                   "main": "0x%x" % threading.current_thread().ident}, fh)
    report = open(os.path.join(out, "faulthandler.txt"), "w")
    faulthandler.register(signal.SIGUSR1, file=report, all_threads=True)
    os.write(ready_fd, b"ready\n")
    os.close(ready_fd)
    worker.join()  # HS-LINE: main_join


main()
