#!/usr/bin/env python3
"""A 4-rank ring all-reduce over local sockets where one rank never joins (stdlib only).

Why: the bundled example of `make demo` and a real multi-rank workload for the tests, with
nothing to install. A launcher starts WORLD ranks (as subprocesses with RANK/WORLD_SIZE in
their environment like torchrun, or through multiprocessing "spawn"/"fork" where each rank
sets os.environ["RANK"] after it started, like a torch.multiprocessing.spawn job). The ranks
connect in a ring of Unix sockets and sum their values; the odd rank takes a different path
(it waits for a checkpoint that never comes), so the others block in all_reduce, each at a
different loop step. The launcher says "ready" once every rank sits where it should.

usage: ring_allreduce.py READY [--world N] [--odd R | --odd -1] [--kill R]
                         [--zombie R [--segv]] [--oom-cgroup DIR] [--launcher subprocess|spawn|fork]
READY is an fd number or a FIFO path ("-" for none). --odd -1: no odd rank, every rank
finishes the all-reduce and waits for work. --kill R: rank R is killed (and reaped) before
"ready", so it is missing. --zombie R: rank R is killed and left unreaped (a zombie).
--segv (with --zombie R): rank R dies of a real segfault with RLIMIT_CORE raised, so the kernel
writes its core by kernel.core_pattern.
--oom-cgroup DIR: the launcher and the rank of --kill/--zombie are moved into the memory cgroup
DIR and the rank grows until that cgroup's OOM killer kills it (instead of a SIGKILL from the launcher).
"""

import argparse
import multiprocessing
import os
import signal
import socket
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hs_rank_ready as ready  # noqa: E402

DEADLINE_S = 60.0
HANG_S = 3600.0


def connect_ring(rank, world, rundir):
    """Listens for the left neighbour and connects to the right one."""
    me = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    me.bind(os.path.join(rundir, f"r{rank}.sock"))
    me.listen(1)
    right = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    end = time.monotonic() + DEADLINE_S
    while True:
        try:
            right.connect(os.path.join(rundir, f"r{(rank + 1) % world}.sock"))
            break
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > end:
                sys.exit(3)
            time.sleep(0.01)
    me.settimeout(DEADLINE_S)
    left, _ = me.accept()
    left.settimeout(None)
    me.close()
    return left, right


def all_reduce(left, right, value, rank, world, park_step):
    """Ring sum: pass what came from the left on to the right, WORLD-1 times."""
    total = value
    outgoing = value
    for step in range(world - 1):
        right.sendall(struct.pack("!q", outgoing))
        if step == park_step:
            ready.notify_parked(rank, str(ready.SYS_RECVFROM))
        data = b""
        while len(data) < 8:
            chunk = left.recv(8 - len(data))  # HS-LINE: recv
            if not chunk:
                sys.exit(4)
            data += chunk
        outgoing = struct.unpack("!q", data)[0]
        total += outgoing
    return total


def wait_for_checkpoint(rank):
    """The odd rank's different path: it waits for a checkpoint that never comes."""
    ready.notify_parked(rank, ready.SLEEP)
    time.sleep(HANG_S)  # HS-LINE: odd


def wait_for_work(rank, total):
    """Where every rank goes after a successful all-reduce."""
    ready.notify_parked(rank, ready.SLEEP)
    time.sleep(HANG_S)  # HS-LINE: done
    return total


def eat_memory(*_):
    """SIGUSR1 (--oom-cgroup): grow until the memory cgroup's OOM killer ends this rank."""
    hoard = []
    while True:
        block = bytearray(8 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        hoard.append(block)


def segfault(*_):
    """SIGUSR2 (--segv): a real fault (a read of address 0), so the kernel logs it."""
    import ctypes
    ctypes.string_at(0)  # HS-LINE: segv


def rank_main(rank, world, odd, rundir):
    signal.signal(signal.SIGUSR1, eat_memory)
    signal.signal(signal.SIGUSR2, segfault)
    left, right = connect_ring(rank, world, rundir)
    if rank == odd:
        wait_for_checkpoint(rank)
        return
    park_step = (rank - odd - 1) % world if odd >= 0 else None
    total = all_reduce(left, right, rank + 1, rank, world, park_step)
    wait_for_work(rank, total)


def mp_rank_entry(rank, world, odd, rundir, ctl):
    """multiprocessing ranks learn their rank as an argument and export it, as torch
    scripts do under torch.multiprocessing.spawn: only libc's environ shows it."""
    os.environ["RANK"] = str(rank)
    os.environ["LOCAL_RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(world)
    os.environ[ready.CTL_ENV] = ctl
    rank_main(rank, world, odd, rundir)


def launch(args):
    rundir = tempfile.mkdtemp(prefix="hs-ring-")
    ctl = os.path.join(rundir, "ctl")
    collector = ready.ParkCollector(ctl)
    ranks = []  # (rank, handle) with handle a Popen or a multiprocessing.Process
    if args.launcher == "subprocess":
        for r in range(args.world):
            env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(args.world),
                       **{ready.CTL_ENV: ctl})
            p = subprocess_popen([sys.executable, os.path.abspath(__file__), "-", "--rank-of-env",
                                  "--world", str(args.world), "--odd", str(args.odd),
                                  "--rundir", rundir], env)
            ranks.append((r, p))
    else:
        ctx = multiprocessing.get_context(args.launcher)
        for r in range(args.world):
            p = ctx.Process(target=mp_rank_entry, args=(r, args.world, args.odd, rundir, ctl),
                            name=f"rank{r}")
            p.start()
            ranks.append((r, p))

    def alive():
        return all(is_alive(h) for _, h in ranks)

    try:
        collector.wait(range(args.world), timeout=DEADLINE_S, alive=alive)
    except ready.NotReady as e:
        print(f"ring_allreduce: {e}", file=sys.stderr)
        for _, h in ranks:
            kill(h)
        sys.exit(3)
    finally:
        collector.close()
    if args.kill is not None:
        for r, h in ranks:
            if r == args.kill and args.oom_cgroup:
                oom(h.pid, args.oom_cgroup)
                wait(h)  # reaped: the rank is missing, its death only in the kernel log
            elif r == args.kill:
                kill(h)  # killed and reaped: the rank is missing, not a zombie
    if args.zombie is not None:
        pid = dict(ranks)[args.zombie].pid
        if args.oom_cgroup:
            oom(pid, args.oom_cgroup)
        elif args.segv:
            import resource
            resource.prlimit(pid, resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            os.kill(pid, signal.SIGUSR2)
        else:
            os.kill(pid, signal.SIGKILL)
        end = time.monotonic() + DEADLINE_S
        while state_of(pid) != "Z":
            if time.monotonic() > end:
                sys.exit(3)
            time.sleep(0.005)
    ready.say_ready(None if args.ready == "-" else args.ready)
    for r, h in ranks:
        if r not in (args.kill, args.zombie):
            wait(h)
    if args.zombie is not None:
        time.sleep(HANG_S)  # the zombie stays unreaped while the job hangs


def subprocess_popen(argv, env):
    import subprocess
    return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL)


def state_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()[0]


def oom(pid, cgroup):
    """Moves rank `pid` and this launcher into memory cgroup `cgroup` (the job's cgroup, as a
    batch system makes one) and makes the rank outgrow the limit. The launcher's presence is the
    evidence that links a reaped rank's OOM kill to the job; it uses little memory, so the
    kernel's choice of victim stays the growing rank."""
    for p in (os.getpid(), pid):
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as fh:
            fh.write(str(p))
    os.kill(pid, signal.SIGUSR1)


def is_alive(h):
    return h.poll() is None if hasattr(h, "poll") else h.is_alive()


def kill(h):
    if hasattr(h, "poll"):
        h.kill()
        h.wait()
    else:
        h.kill()
        h.join()


def wait(h):
    """Blocks in waitpid like a real launcher (the ranks end the job when they exit)."""
    if hasattr(h, "poll"):
        h.wait()
    else:
        h.join()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ready")
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--odd", type=int, default=2)
    ap.add_argument("--kill", type=int)
    ap.add_argument("--zombie", type=int)
    ap.add_argument("--oom-cgroup", help="with --kill/--zombie: the rank dies by this memory cgroup's OOM killer")
    ap.add_argument("--segv", action="store_true", help="with --zombie: the rank dies of a segfault, core dumped")
    ap.add_argument("--launcher", choices=["subprocess", "spawn", "fork"], default="subprocess")
    ap.add_argument("--rank-of-env", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rundir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank_of_env:
        rank_main(int(os.environ["RANK"]), args.world, args.odd, args.rundir)
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    launch(args)


if __name__ == "__main__":
    main()
