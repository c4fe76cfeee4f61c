"""One process, two live CPython runtimes of one version, a thread blocked in each.

Usage: python3.11 py_two_live_runtimes.py READY_FD EXT_DIR LIBPYTHON     (3.11 with a 3.11
libpython of another build, e.g. Debian's python3.11 and pyenv's libpython3.11.so.1.0)

Why: a process can run more than one runtime at once (a library loaded with its own copy of
libpython, RTLD_LOCAL|RTLD_DEEPBIND, initialized on its own thread); hangscan must walk every
live one, as it walks subinterpreters. EXT_DIR holds hs_second.so (built by the test), whose
start(LIBPYTHON, code) loads that library and runs `code` in its runtime on a new thread. The
code runs this file again there with SECOND set: that thread blocks at "# HS-LINE:
second_wait". The main thread waits until it sleeps, says "ready" and blocks at main_wait.
"""
import os
import sys
import time


def second(started_fd, block_fd):
    os.write(started_fd, b"s")
    os.read(block_fd, 1)  # HS-LINE: second_wait


def sleeping_reader(exclude):
    """A thread of this process other than `exclude` that sleeps in read(2), or None."""
    for tid in os.listdir("/proc/self/task"):
        if int(tid) == exclude:
            continue
        try:
            with open("/proc/self/task/%s/syscall" % tid) as fh:
                if fh.read().split()[0] == "0":
                    return int(tid)
        except (OSError, IndexError):
            pass
    return None


def main_wait(ready_fd):
    os.write(ready_fd, b"ready\n")
    forever = os.pipe()
    os.read(forever[0], 1)  # HS-LINE: main_wait


def main():
    ready_fd, ext_dir, libpython = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    sys.path.insert(0, ext_dir)
    import hs_second
    started, block = os.pipe(), os.pipe()
    # The second runtime finds its own standard library (it is initialized after this one).
    os.environ["PYTHONHOME"] = os.path.dirname(os.path.dirname(libpython))
    code = "SECOND = (%d, %d)\nexec(compile(open(%r).read(), %r, 'exec'))\n" % (
        started[1], block[0], __file__, __file__)
    hs_second.start(libpython, code)
    if os.read(started[0], 1) != b"s":
        sys.exit(3)
    deadline, calm = time.time() + 60, 0
    while calm < 3:
        if time.time() > deadline:
            sys.exit(3)
        time.sleep(0.02)
        calm = calm + 1 if sleeping_reader(os.getpid()) else 0
    main_wait(ready_fd)  # HS-LINE: main_calls_wait


if "SECOND" in globals():
    second(*SECOND)  # noqa: F821  # HS-LINE: second_module
elif __name__ == "__main__":
    main()  # HS-LINE: module_main
