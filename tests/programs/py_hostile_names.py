"""A Python target whose names would drive a terminal or forge report lines.

Usage: python3 py_hostile_names.py READY_FD [ARG...]

The main thread blocks in a function whose code object is renamed (code.replace) to a name
holding ESC, BEL, CR and newlines, defined in code compiled under a file name that does the
same; a second thread blocks with such a threading name and sets its kernel thread name
(prctl PR_SET_NAME) to ESC, BEL and a newline. A child process names itself so and exits,
left a zombie (never reaped) for the error about it. The test passes more such bytes as ARGs
(the command line). "ready" is written to READY_FD once the worker has named itself and the
child has exited; the main thread blocks right after; the test kills the process.
"""
import ctypes
import os
import sys
import threading

FUNCTION = "\x1b]0;HACKED\x07\x1b[2J\r\nSUSPECT rank 9 is FAKE (fn)"
FILE = "\x1b]0;X\x07evil\nSUSPECT rank 9 is FAKE"
THREAD = "worker\x1b[31m\nSUSPECT rank 8 is FAKE"
COMM = b"\x1b[2J\x07\nSUSPECT 9"  # 15 bytes: the kernel keeps 15

NEVER = threading.Lock()
NEVER.acquire()
NAMED = threading.Event()

SOURCE = "def blocker(lock):\n    lock.acquire()\n"


def set_comm():
    ctypes.CDLL(None, use_errno=True).prctl(15, ctypes.c_char_p(COMM), 0, 0, 0)  # PR_SET_NAME


def worker():
    set_comm()
    NAMED.set()
    NEVER.acquire()


def main():
    ready_fd = int(sys.argv[1])
    scope = {}
    exec(compile(SOURCE, FILE, "exec"), scope)
    blocker = scope["blocker"]
    blocker.__code__ = blocker.__code__.replace(co_name=FUNCTION, co_qualname=FUNCTION)
    threading.Thread(target=worker, name=THREAD, daemon=True).start()
    NAMED.wait()
    child = os.fork()
    if child == 0:
        set_comm()
        os._exit(0)
    os.waitid(os.P_PID, child, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
    os.write(ready_fd, b"ready\n")
    blocker(NEVER)


main()
