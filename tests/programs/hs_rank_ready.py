"""The "ready" handshake for multi-rank workloads (python side; stdlib only).

Why: a multi-rank job is ready to be examined only when every rank is parked where the test
expects it, and no single rank can tell that. Each rank sends one datagram to a Unix socket
right before it blocks ("parked RANK PID TID EXPECT"); a ParkCollector (in the job's launcher
or in the test itself, for torchrun and mpirun jobs) waits for every rank's datagram, then
confirms from /proc that each rank's thread really sleeps in the expected syscall (or, for
ranks that spin, that it is running). Every wait has a deadline: never sleep and hope.

EXPECT is a comma-separated list of x86-64 syscall numbers, "any" (some syscall) or "spin".
"""

import os
import socket
import threading
import time

SYS_READ = 0
SYS_POLL = 7
SYS_RECVFROM = 45
SYS_WAIT4 = 61
SYS_FUTEX = 202
SYS_CLOCK_NANOSLEEP = 230
SYS_NANOSLEEP = 35
SYS_EPOLL_WAIT = 232
SYS_SELECT = 23
SYS_PSELECT6 = 270
SYS_PPOLL = 271
SLEEP = f"{SYS_CLOCK_NANOSLEEP},{SYS_NANOSLEEP},{SYS_SELECT},{SYS_PSELECT6}"
CTL_ENV = "HS_RANK_CTL"


def notify_parked(rank, expect, ctl=None):
    """Tells the collector that this thread is about to block (call right before blocking)."""
    path = ctl or os.environ.get(CTL_ENV)
    if not path:
        return
    msg = f"parked {rank} {os.getpid()} {threading.get_native_id()} {expect}".encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(msg, path)


def thread_syscall(pid, tid):
    """Syscall number a thread sleeps in; -1 running; None when unreadable."""
    try:
        with open(f"/proc/{pid}/task/{tid}/syscall") as f:
            text = f.read().split()
    except OSError:
        return None
    if not text:
        return None
    if text[0] == "running":
        return -1
    return int(text[0])


class NotReady(RuntimeError):
    pass


class ParkCollector:
    """Receives the ranks' "parked" datagrams on a Unix socket at `path`."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.parked = {}  # rank -> (pid, tid, expect)

    def close(self):
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def wait(self, ranks, timeout=120.0, alive=lambda: True):
        """Waits until every rank in `ranks` said parked and sits where it said."""
        end = time.monotonic() + timeout
        want = set(ranks)
        while not want <= set(self.parked):
            left = end - time.monotonic()
            if left <= 0:
                raise NotReady(f"ranks {sorted(want - set(self.parked))} never parked")
            if not alive():
                raise NotReady("the job exited before every rank parked")
            self.sock.settimeout(min(left, 0.2))
            try:
                data = self.sock.recv(512).decode().split()
            except socket.timeout:
                continue
            if len(data) == 5 and data[0] == "parked":
                self.parked[int(data[1])] = (int(data[2]), int(data[3]), data[4])
        for rank in sorted(want):
            self._confirm(rank, end)
        return {r: self.parked[r][0] for r in want}

    def _confirm(self, rank, end):
        pid, tid, expect = self.parked[rank]
        if expect == "spin":
            return  # announced right before entering a busy loop: nothing to see in /proc
        allowed = None if expect == "any" else {int(x) for x in expect.split(",")}
        stable = 0
        # Three consecutive observations in the expected syscall: a thread passing through
        # a futex on its way to the blocking call does not stay there.
        while stable < 3:
            nr = thread_syscall(pid, tid)
            if nr is None:
                raise NotReady(f"rank {rank} (pid {pid}) vanished")
            ok = nr >= 0 and (allowed is None or nr in allowed)
            stable = stable + 1 if ok else 0
            if time.monotonic() > end:
                raise NotReady(f"rank {rank} (pid {pid} tid {tid}) not in syscall {expect}: {nr}")
            time.sleep(0.02)


def say_ready(where):
    """Writes "ready\\n" to an fd number or a FIFO path (the TargetPool convention)."""
    if where is None:
        return
    if str(where).isdigit():
        fd = int(where)
    else:
        fd = os.open(where, os.O_WRONLY)
    os.write(fd, b"ready\n")
    os.close(fd)
