#!/usr/bin/env python3
"""The classic subprocess deadlock: the parent wait()s for a child that writes more than a
pipe holds to stdout=PIPE, which only the parent reads (and it never will: it waits).

Why: the wait graph's oracle for waits that are not on sockets. The parent blocks in wait4() on
its child (HS-LINE popen-wait); the child blocks in write() on the full pipe (HS-LINE
child-write), whose read end only the parent holds. Says "ready" once the child sleeps in
write() and the parent in wait4() (a short-lived thread of the parent checks that).

usage: popen_deadlock.py READY
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hs_rank_ready as ready  # noqa: E402

SYS_WRITE = 1


def child():
    # A loop, as careful writers do: a stop (hangscan's own) cuts a blocked write() short.
    data = memoryview(b"x" * (1 << 20))
    while data:
        data = data[os.write(1, data):]  # HS-LINE: child-write


def wait_in(pid, nr, deadline):
    """Until thread `pid` sleeps in syscall `nr` (three looks in a row), or exit 3."""
    stable = 0
    while stable < 3:
        stable = stable + 1 if ready.thread_syscall(pid, pid) == nr else 0
        if time.monotonic() > deadline:
            print(f"popen_deadlock: pid {pid} not in syscall {nr}", file=sys.stderr)
            os._exit(3)
        time.sleep(0.02)


def main():
    if sys.argv[1] == "--child":
        child()
        return
    import subprocess
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child"],
                            stdout=subprocess.PIPE)
    deadline = time.monotonic() + 30
    wait_in(proc.pid, SYS_WRITE, deadline)
    # A thread says ready once the main thread sleeps in wait4, then ends.
    import threading
    threading.Thread(target=lambda: (wait_in(os.getpid(), ready.SYS_WAIT4, deadline),
                                     ready.say_ready(sys.argv[1]))).start()
    proc.wait()  # HS-LINE: popen-wait


if __name__ == "__main__":
    main()
