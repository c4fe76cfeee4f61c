"""Ranks for `hangscan watch` tests: each says "ready" on READY_FD, then does one thing.

Usage: python3 watch_ranks.py READY_FD MODE [ARG]
  burn          loops in burn_cpu() forever (on CPU, in Python code)
  reader FIFO   reads one byte at a time from FIFO forever (off CPU in read(), woken by the writer)
  block FIFO    like reader, for a job that stops: nobody writes FIFO
  recv SOCKET   connects to the Unix stream socket SOCKET and receives one byte at a time forever
                (off CPU in recvfrom(), woken by the sender)
  sleep         sleeps in time.sleep() forever (the odd rank of a stopped job)
  nap SECONDS   sleeps SECONDS in time.sleep() again and again (each nap ended by its timer)
  alarm SECONDS sleeps while an interval timer (setitimer) sends it SIGALRM every SECONDS
  grow FIFO     waits for one byte on FIFO, then allocates memory until something kills it
                (the test puts it in a memory cgroup with a limit: the OOM killer's victim)
  exec FIFO PY  waits for one byte on FIFO, then replaces its program by `PY watch_ranks.py - burn`
                (READY_FD "-": none)
  trickle SECONDS MS  works MS milliseconds of CPU every SECONDS, sleeping between (a job that
                progresses slowly: the sampler sees few of its bursts)
"""
import os
import socket
import sys
import time


def burn_cpu():
    total = 0
    while True:  # HS-LINE: burn_while
        for i in range(10000):  # HS-LINE: burn_for
            total += i * i  # HS-LINE: burn_add


def main():
    ready_fd = None if sys.argv[1] == "-" else int(sys.argv[1])
    mode = sys.argv[2]
    fd = None
    sock = None
    if mode in ("reader", "block", "grow", "exec"):
        fd = os.open(sys.argv[3], os.O_RDWR)  # the test finds it in /proc/PID/fd
    elif mode == "recv":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(sys.argv[3])
    if ready_fd is not None:
        os.write(ready_fd, b"ready\n")
        os.close(ready_fd)
    if mode == "burn":
        burn_cpu()
    elif mode in ("reader", "block"):
        while True:
            if not os.read(fd, 1):  # HS-LINE: block_read
                return
    elif mode == "recv":
        while True:
            if not sock.recv(1):
                return
    elif mode == "grow":
        os.read(fd, 1)
        from ring_allreduce import eat_memory  # the deaths tests' OOM victim, the same way
        eat_memory()
    elif mode == "exec":
        os.read(fd, 1)  # the test says when: the watch is recording
        os.execv(sys.argv[4], [sys.argv[4], os.path.abspath(__file__), "-", "burn"])
    elif mode == "sleep":
        while True:
            time.sleep(3600)
    elif mode == "alarm":
        import signal
        signal.signal(signal.SIGALRM, lambda *_: None)
        signal.setitimer(signal.ITIMER_REAL, float(sys.argv[3]), float(sys.argv[3]))
        while True:
            signal.pause()
    elif mode == "nap":
        while True:
            time.sleep(float(sys.argv[3]))
    elif mode == "trickle":
        while True:
            until = time.process_time() + float(sys.argv[4]) / 1000
            while time.process_time() < until:
                pass
            time.sleep(float(sys.argv[3]))


main()  # HS-LINE: module_main
